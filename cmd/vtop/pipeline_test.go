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
		lc       loopConfig
		min, max int
	}{
		{"once", loopConfig{}, 59, 61},
		{"tui without ticks", loopConfig{publish: func(*diagnose.Frame) {}, tick: time.Hour}, 39, 41},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, _, err := resolve([]string{"--gpu", "none", "-i", "1s", "127.0.0.1:1"}, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			o.targets = nil
			src := clockOnly{time.Unix(1_800_000_000, 0), 250 * time.Millisecond, time.Minute}
			p, err := newPipelineOf(o, slog.New(slog.NewTextHandler(io.Discard, nil)), src)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.serve(context.Background(), c.lc); err != nil {
				t.Fatal(err)
			}
			if p.evals < c.min || p.evals > c.max {
				t.Errorf("%d evaluations over a minute of 1 s polls, want %d-%d", p.evals, c.min, c.max)
			}
		})
	}
}
