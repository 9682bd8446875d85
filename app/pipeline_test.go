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

// A source that fails without feeding the endpoints (a dcgm-exporter, a
// discovery rule) is in Frame.Failing, failing since its first report,
// once: a later report keeps its age, a warning that turns into a failure
// dates it from then, and clearing it removes it. Feeding sources are
// Outages and blind the endpoints; a problem that is no failure is only a
// problem.
func TestFailingSources(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	p, err := NewOf(&Config{Interval: time.Second, Window: time.Minute}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	p.Apply(&sources.Batch{Now: t0, Arrived: []sources.Target{{Name: "a:8000"}}})
	dcgm := "dcgm-exporter 127.0.0.1:9400"
	apply := func(d time.Duration, ps ...sources.Problem) *diagnose.Frame {
		p.Apply(&sources.Batch{Now: t0.Add(d), Problems: ps})
		return p.Frame()
	}
	apply(time.Second, sources.Problem{Key: "file_sd t.json", Text: "12000 targets"})
	fr := apply(2*time.Second, sources.Problem{Key: dcgm, Text: "connection refused", Fails: true})
	if len(fr.Failing) != 1 || fr.Failing[0].Source != dcgm || !fr.Failing[0].Since.Equal(t0.Add(2*time.Second)) || len(fr.Outages) != 0 {
		t.Fatalf("failing %+v outages %+v", fr.Failing, fr.Outages)
	}
	if fr.Endpoints[0].Blind {
		t.Error("an exporter failing blinds the endpoints")
	}
	fr = apply(5*time.Second, sources.Problem{Key: dcgm, Text: "timed out after 3s", Fails: true},
		sources.Problem{Key: "file_sd t.json", Text: "yaml: line 1", Fails: true})
	if len(fr.Failing) != 2 || fr.Failing[0].Err != "timed out after 3s" || !fr.Failing[0].Since.Equal(t0.Add(2*time.Second)) ||
		!fr.Failing[1].Since.Equal(t0.Add(5*time.Second)) || len(fr.Problems) != 2 {
		t.Fatalf("failing %+v problems %q", fr.Failing, fr.Problems)
	}
	fr = apply(6*time.Second, sources.Problem{Key: dcgm})
	if len(fr.Failing) != 1 || fr.Failing[0].Source != "file_sd t.json" || len(fr.Problems) != 1 {
		t.Fatalf("after clearing: failing %+v problems %q", fr.Failing, fr.Problems)
	}
	fr = apply(7*time.Second, sources.Problem{Key: "Prometheus p:9090", Text: "refused", Feeds: true})
	if len(fr.Outages) != 1 || len(fr.Failing) != 1 || !fr.Endpoints[0].Blind {
		t.Fatalf("outages %+v failing %+v blind %v", fr.Outages, fr.Failing, fr.Endpoints[0].Blind)
	}
}

// A target's pod and namespace, where discovery gives them, reach its
// view (the user's actions read them there); a target without none.
func TestPodNamespaceReachTheView(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	p, err := NewOf(&Config{Interval: time.Second, Window: time.Minute, Targets: []sources.Target{{Name: "static:8000"}}},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	p.Apply(&sources.Batch{Now: t0, Arrived: []sources.Target{{Name: "10.0.0.1:8000", Pod: "vllm-0", Namespace: "llm"}}})
	// Found later: it joins, and keeps them too.
	p.Apply(&sources.Batch{Now: t0.Add(time.Minute), Arrived: []sources.Target{{Name: "10.0.0.2:8000", Pod: "vllm-1", Namespace: "llm"}}})
	fr := p.Frame()
	got := map[string][2]string{}
	for _, e := range fr.Endpoints {
		got[e.Name] = [2]string{e.Pod, e.Namespace}
	}
	want := map[string][2]string{"static:8000": {}, "10.0.0.1:8000": {"vllm-0", "llm"}, "10.0.0.2:8000": {"vllm-1", "llm"}}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("%s: %q, want %q", n, got[n], w)
		}
	}
}
