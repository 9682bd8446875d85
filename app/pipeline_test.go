package app

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// clockOnly moves the pipeline's clock in steps, with nothing to ingest.
type clockOnly struct {
	t0         time.Time
	step, span time.Duration
}

func (c clockOnly) Run(ctx context.Context, out chan<- sources.Batch) error {
	for d := c.step; d <= c.span; d += c.step {
		if !sources.Send(ctx, out, sources.Batch{Now: c.t0.Add(d)}) {
			return nil
		}
	}
	return nil
}

// The rules are evaluated once per interval of data time, however often
// batches arrive (four a second here), not twice; with the TUI's publish
// ticks doing that, the data clock only evaluates when the ticks fall
// behind (here they never come: every 1.5 intervals).
func TestEvaluatesOncePerInterval(t *testing.T) {
	for _, c := range []struct {
		name     string
		lc       LoopConfig
		min, max int
	}{
		{"once", LoopConfig{}, 59, 61},
		{"tui without ticks", LoopConfig{Publish: func(*diagnose.Frame) {}, Tick: time.Hour}, 39, 41},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := clockOnly{time.Unix(1_800_000_000, 0), 250 * time.Millisecond, time.Minute}
			p, err := NewOf(&Config{Interval: time.Second, Window: time.Minute}, slog.New(slog.NewTextHandler(io.Discard, nil)), src)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Serve(context.Background(), c.lc); err != nil {
				t.Fatal(err)
			}
			if p.evals < c.min || p.evals > c.max {
				t.Errorf("%d evaluations over a minute of 1 s polls, want %d-%d", p.evals, c.min, c.max)
			}
		})
	}
}
