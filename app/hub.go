package app

import (
	"context"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// Hub runs the pipeline for a live view: the pipeline's event loop owns the
// engine (one goroutine), applies commands from the UI, and publishes a
// frame every interval. The UI gets the newest frame; a slow UI skips
// frames, it never queues them.
type Hub struct {
	p      *Pipeline
	frames chan *diagnose.Frame // capacity 1, newest wins
	cmds   chan hubCmd
}

// hubCmd is a request from the UI, applied on the hub's goroutine.
type hubCmd struct {
	window  time.Duration // >0: change the window
	pollNow bool
	slo     *diagnose.SLO // switch the profile the latency rules measure against
}

// NewHub returns the hub of p; Run starts it.
func NewHub(p *Pipeline) *Hub {
	return &Hub{p: p, frames: make(chan *diagnose.Frame, 1), cmds: make(chan hubCmd, 8)}
}

// SetWindow asks for a new quantile/rate window.
func (h *Hub) SetWindow(w time.Duration) {
	select {
	case h.cmds <- hubCmd{window: w}:
	default:
	}
}

// SetSLO switches the SLO profile of the latency rules.
func (h *Hub) SetSLO(s diagnose.SLO) {
	select {
	case h.cmds <- hubCmd{slo: &s}:
	default:
	}
}

// PollNow asks every target to poll immediately.
func (h *Hub) PollNow() {
	select {
	case h.cmds <- hubCmd{pollNow: true}:
	default:
	}
}

// Frames delivers published frames; it is closed when Run returns.
func (h *Hub) Frames() <-chan *diagnose.Frame { return h.frames }

// Run feeds the pipeline until ctx ends, publishing a frame every interval.
func (h *Hub) Run(ctx context.Context, interval time.Duration) {
	defer close(h.frames)
	if err := h.p.Serve(ctx, LoopConfig{Publish: h.put, Tick: interval, cmds: h.cmds}); err != nil {
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
