package main

import (
	"context"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// hub runs the pipeline for a live view: it owns the engine (one goroutine),
// drains scrapes as they arrive, applies commands from the UI, and publishes
// a frame every interval. The UI gets the newest frame; a slow UI skips
// frames, it never queues them.
type hub struct {
	p      *pipeline
	frames chan *diagnose.Frame // capacity 1, newest wins
	cmds   chan hubCmd
}

// hubCmd is a request from the UI, applied on the hub's goroutine.
type hubCmd struct {
	window  time.Duration // >0: change the window
	pollNow bool
	slo     *diagnose.SLO // switch the profile the latency rules measure against
}

func newHub(p *pipeline) *hub {
	return &hub{p: p, frames: make(chan *diagnose.Frame, 1), cmds: make(chan hubCmd, 8)}
}

// SetWindow asks for a new quantile/rate window.
func (h *hub) SetWindow(w time.Duration) {
	select {
	case h.cmds <- hubCmd{window: w}:
	default:
	}
}

// SetSLO switches the SLO profile of the latency rules.
func (h *hub) SetSLO(s diagnose.SLO) {
	select {
	case h.cmds <- hubCmd{slo: &s}:
	default:
	}
}

// PollNow asks every target to poll immediately.
func (h *hub) PollNow() {
	select {
	case h.cmds <- hubCmd{pollNow: true}:
	default:
	}
}

// Frames delivers published frames; it is closed when run returns.
func (h *hub) Frames() <-chan *diagnose.Frame { return h.frames }

func (h *hub) run(ctx context.Context, interval time.Duration) {
	defer close(h.frames)
	go h.p.poller.Run(ctx)
	h.p.gpu.start(ctx, h.p.engine)
	defer func() {
		if err := h.p.gpu.stop(); err != nil {
			h.p.log.Debug("gpu source close", "err", err)
		}
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	box := h.p.poller.Mailbox()
	h.publish()
	for {
		select {
		case <-ctx.Done():
			return
		case <-box.Ready():
			h.p.drain()
		case <-h.p.gpu.ready:
			h.p.gpu.drain(h.p.engine)
		case c := <-h.cmds:
			if c.window > 0 {
				h.p.engine.SetWindow(c.window)
				h.publish()
			}
			if c.pollNow {
				h.p.poller.PollNow()
			}
			if c.slo != nil {
				h.p.detector.SetSLO(*c.slo)
				h.publish()
			}
		case <-tick.C:
			h.p.drain()
			h.publish()
		}
	}
}

func (h *hub) publish() {
	fr := h.p.frame(time.Now())
	select {
	case <-h.frames: // drop the unread older frame
	default:
	}
	h.frames <- fr
}
