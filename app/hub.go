package app

import (
	"context"
	"sync"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// Hub runs the pipeline for a live view: the pipeline's event loop owns the
// engine (one goroutine), applies the UI's requests, and publishes a frame
// every interval. The UI gets the newest frame; a slow UI skips frames, it
// never queues them.
//
// Requests are settings, not events: the hub keeps the newest value of each
// and the loop applies whatever is newest when it wakes, so keys pressed
// faster than the loop runs (o o o) end on the last one, never on one the
// loop happened to see last, and a request is never dropped.
type Hub struct {
	p      *Pipeline
	frames chan *diagnose.Frame // capacity 1, newest wins
	wake   chan struct{}        // capacity 1: something was asked

	mu   sync.Mutex
	want request
}

// request is what the UI asked for since the loop last looked.
type request struct {
	window  time.Duration // >0: this window
	slo     *diagnose.SLO // this profile for the latency rules
	pollNow bool
}

// NewHub returns the hub of p; Run starts it.
func NewHub(p *Pipeline) *Hub {
	return &Hub{p: p, frames: make(chan *diagnose.Frame, 1), wake: make(chan struct{}, 1)}
}

func (h *Hub) ask(f func(*request)) {
	h.mu.Lock()
	f(&h.want)
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default: // already woken: the loop reads the newest request
	}
}

// take hands the loop what was asked, and forgets it.
func (h *Hub) take() request {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.want
	h.want = request{}
	return r
}

// SetWindow asks for a new quantile/rate window.
func (h *Hub) SetWindow(w time.Duration) { h.ask(func(r *request) { r.window = w }) }

// SetSLO switches the SLO profile of the latency rules.
func (h *Hub) SetSLO(s diagnose.SLO) { h.ask(func(r *request) { r.slo = &s }) }

// PollNow asks every target to poll immediately.
func (h *Hub) PollNow() { h.ask(func(r *request) { r.pollNow = true }) }

// Frames delivers published frames; it is closed when Run returns.
func (h *Hub) Frames() <-chan *diagnose.Frame { return h.frames }

// Run feeds the pipeline until ctx ends, publishing a frame every interval.
func (h *Hub) Run(ctx context.Context, interval time.Duration) {
	defer close(h.frames)
	if err := h.p.Serve(ctx, LoopConfig{Publish: h.put, Tick: interval, hub: h}); err != nil {
		h.p.log.Debug("sources", "err", err)
	}
}

// put hands a frame to the UI, dropping an unread older one.
func (h *Hub) put(fr *diagnose.Frame) {
	select {
	case <-h.frames:
	default:
	}
	h.frames <- fr
}
