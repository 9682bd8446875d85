package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/app"
	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

// simReplay is a source that replays a simulated replica in simulated
// time, a scrape per simulated second, as fast as the pipeline takes them:
// what a recording's replay does, with the simulator's real exposition and
// the real normalizer in place of a file.
type simReplay struct {
	fleet *sim.Fleet
	for_  time.Duration
}

func (s simReplay) Run(ctx context.Context, out chan<- sources.Batch) error {
	r := s.fleet.Replicas()[0]
	n := sources.NewNormalizer()
	for end := s.fleet.Elapsed() + s.for_; s.fleet.Elapsed() < end; {
		s.fleet.Advance(time.Second)
		sc := r.Scrape(n, sim.FormatText)
		if !sources.Send(ctx, out, sources.Batch{Now: s.fleet.Now(), Scrapes: []sources.Scrape{sc}}) {
			return nil
		}
	}
	return nil
}

// The pipeline's clock is the sources' clock: six simulated minutes of a
// thrashing replica, replayed in well under the wall-clock minutes its
// rule's for duration asks, are judged as six minutes, and the event loop
// ends when the replay does.
func TestPipelineRunsOnSourceTime(t *testing.T) {
	fleet, err := sim.NewFleet(sim.FleetConfig{Replicas: []sim.ReplicaConfig{{Name: "r0",
		Scenarios: []sim.ScenarioSpec{{Name: "kv-thrashing"}}}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	o, _, err := resolve([]string{"--gpu", "none", "--window", "60s", "127.0.0.1:1"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	o.targets = nil // the replay names its own target
	p, err := newPipelineOf(o, slog.New(slog.NewTextHandler(io.Discard, nil)), simReplay{fleet, 6 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var last *diagnose.Frame
	wall := time.Now()
	// A wall-clock minute of ticks: the loop must end with the replay, not
	// with ctx.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Serve(ctx, app.LoopConfig{Publish: func(f *diagnose.Frame) { last = f }, Tick: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the loop ran until its deadline (%s), not until the replay ended", time.Since(wall))
	}
	if last == nil || !last.Time.Equal(fleet.Now()) {
		t.Fatalf("last frame at %v, want the replay's end %v", last, fleet.Now())
	}
	if len(last.Endpoints) != 1 || last.Endpoints[0].Name != "r0" || last.Endpoints[0].State != diagnose.StateUp {
		t.Fatalf("endpoints: %+v", last.Endpoints)
	}
	var ids []string
	for _, f := range last.Findings {
		ids = append(ids, f.Rule)
		if f.Rule == "kv_cache_thrashing" {
			return
		}
	}
	t.Errorf("no kv_cache_thrashing after 6 simulated minutes; findings %v", ids)
}

// newPipelineOf (the tests' own sources) builds the pipeline of o over the given sources.
func newPipelineOf(o *options, logger *slog.Logger, srcs ...sources.Source) (*app.Pipeline, error) {
	return app.NewOf(o.appConfig(), logger, srcs...)
}

// replayPipeline is vtop's pipeline scraping h directly: its batches
// replayed at interval step, with the TUI's 60 s window and no GPUs.
func replayPipeline(t *testing.T, h *history, step time.Duration) *app.Pipeline {
	t.Helper()
	o, _, err := resolve([]string{"--gpu", "none", "--interval", step.String(), "--window", "60s", "127.0.0.1:1"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	o.targets = nil
	p, err := newPipelineOf(o, quiet(), replay(h.batches))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
