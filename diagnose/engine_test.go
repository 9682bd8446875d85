package diagnose

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// fx is one engine's state, rendered as vLLM V1 text exposition.
type fx struct {
	model, engine      string
	gen, prompt, pre   float64
	pq, ph             float64
	ttftBounds         []string
	ttft               []float64 // cumulative, last is +Inf
	ttftSum            float64
	stop, length, abrt float64
	kv, run, wait      float64
	blocks             int
	created            float64 // _created of the counters
	start              float64 // process_start_time_seconds
}

func (f fx) labels() string {
	if f.engine == "" {
		return fmt.Sprintf("model_name=%q", f.model)
	}
	return fmt.Sprintf("engine=%q,model_name=%q", f.engine, f.model)
}

func (f fx) text() string {
	l := f.labels()
	var b strings.Builder
	if f.start != 0 {
		fmt.Fprintf(&b, "process_start_time_seconds %g\n", f.start)
	}
	fmt.Fprintf(&b, "# HELP vllm:num_requests_running Number of requests in model execution batches.\n")
	fmt.Fprintf(&b, "vllm:num_requests_running{%s} %g\nvllm:num_requests_waiting{%s} %g\nvllm:kv_cache_usage_perc{%s} %g\n", l, f.run, l, f.wait, l, f.kv)
	counter := func(name string, v float64) {
		fmt.Fprintf(&b, "%s_total{%s} %g\n", name, l, v)
		if f.created != 0 {
			fmt.Fprintf(&b, "%s_created{%s} %g\n", name, l, f.created)
		}
	}
	counter("vllm:generation_tokens", f.gen)
	counter("vllm:prompt_tokens", f.prompt)
	counter("vllm:num_preemptions", f.pre)
	counter("vllm:prefix_cache_queries", f.pq)
	counter("vllm:prefix_cache_hits", f.ph)
	for _, r := range []struct {
		reason string
		v      float64
	}{{"stop", f.stop}, {"length", f.length}, {"abort", f.abrt}} {
		fmt.Fprintf(&b, "vllm:request_success_total{%s,finished_reason=%q} %g\n", l, r.reason, r.v)
	}
	bounds := f.ttftBounds
	if bounds == nil {
		bounds = []string{"0.1", "0.5", "1", "+Inf"}
	}
	for i, le := range bounds {
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{%s,le=%q} %g\n", l, le, f.ttft[i])
	}
	fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_sum{%s} %g\nvllm:time_to_first_token_seconds_count{%s} %g\n", l, f.ttftSum, l, f.ttft[len(f.ttft)-1])
	if f.blocks > 0 {
		eng := ""
		if f.engine != "" {
			eng = fmt.Sprintf("engine=%q,", f.engine)
		}
		fmt.Fprintf(&b, "vllm:cache_config_info{block_size=\"16\",enable_prefix_caching=\"True\",%snum_gpu_blocks=\"%d\"} 1\n", eng, f.blocks)
	}
	return b.String()
}

var t0 = time.Date(2026, 11, 22, 14, 2, 0, 0, time.UTC)

// scrape normalizes fixtures (several engines on one endpoint) with n.
func scrape(t *testing.T, n *sources.Normalizer, at time.Time, engines ...fx) sources.Scrape {
	t.Helper()
	var body strings.Builder
	for _, e := range engines {
		body.WriteString(e.text())
	}
	snap, err := n.Normalize([]byte(body.String()), "text/plain; version=0.0.4")
	if err != nil {
		t.Fatal(err)
	}
	return sources.Scrape{Target: "replica", Time: at, Duration: 3 * time.Millisecond, Data: snap}
}

func approx(t *testing.T, name string, got, want float64) {
	t.Helper()
	if math.IsNaN(want) {
		if !math.IsNaN(got) {
			t.Errorf("%s = %v, want unknown", name, got)
		}
		return
	}
	if math.IsNaN(got) || math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

var base = fx{model: "m", engine: "0", gen: 1000, prompt: 5000, pre: 3, pq: 1000, ph: 100,
	ttft: []float64{10, 40, 100, 100}, ttftSum: 50, stop: 90, length: 5, abrt: 5,
	kv: 0.5, run: 8, wait: 2, blocks: 1000, created: 1.7e9, start: 1.7e9}

func moved() fx {
	f := base
	f.gen, f.prompt, f.pre, f.pq, f.ph = 1600, 7000, 8, 3000, 600
	f.ttft, f.ttftSum = []float64{20, 60, 180, 185}, 109.5
	f.stop, f.length, f.abrt = 160, 15, 10
	f.kv, f.run, f.wait = 0.75, 12, 4
	return f
}

// TestMovingEndpoint: two snapshots 10 s apart; every derived number is
// worked out by hand from the deltas.
func TestMovingEndpoint(t *testing.T) {
	e := New(Config{Window: 60 * time.Second, Interval: 10 * time.Second}, []TargetInfo{{Name: "replica"}})
	n := sources.NewNormalizer()
	e.Ingest(0, scrape(t, n, t0, base))
	e.Ingest(0, scrape(t, n, t0.Add(10*time.Second), moved()))
	f := e.Frame(t0.Add(10 * time.Second))
	s := f.Endpoints[0].Stats
	if f.Endpoints[0].State != StateUp || s.Span != 10*time.Second {
		t.Fatalf("state %v span %v", f.Endpoints[0].State, s.Span)
	}
	approx(t, "gen tok/s", s.GenTokRate, 600.0/10)
	approx(t, "prompt tok/s", s.PromptTokRate, 2000.0/10)
	approx(t, "preemptions/s", s.PreemptionsRate, 5.0/10)
	approx(t, "prefix hit ratio", s.PrefixHitRatio, 500.0/2000)
	approx(t, "req/s", s.ReqRate, 85.0/10)
	approx(t, "abort share", s.AbortShare, 5.0/85)
	// TTFT bucket deltas: 10 ≤0.1, 10 in (0.1,0.5], 60 in (0.5,1], 5 above: 85 requests.
	approx(t, "ttft count", s.TTFT.Count, 85)
	approx(t, "ttft p50", s.TTFT.P50, 0.5+0.5*(42.5-20)/60)
	approx(t, "ttft p90", s.TTFT.P90, 0.5+0.5*(76.5-20)/60)
	approx(t, "ttft p95", s.TTFT.P95, 1) // rank 80.75 > 80: the +Inf bucket → highest finite bound
	approx(t, "ttft mean", s.TTFT.Mean, 59.5/85)
	approx(t, "ttft lowest bound", s.TTFT.Lowest, 0.1)
	approx(t, "ttft highest bound", s.TTFT.Highest, 1)
	approx(t, "kv", s.KVUsage, 0.75)
	approx(t, "running", s.Running, 12)
	approx(t, "kv capacity tokens", s.KVCapacityTokens, 16000)
	if s.PrefixCaching != sources.TriYes {
		t.Error("prefix caching not read from cache_config_info")
	}
	// No ITL histogram exposed: unknown, never zero.
	approx(t, "itl p95", s.ITL.P95, math.NaN())
	if !f.Endpoints[0].RestartedAt.IsZero() {
		t.Error("restart reported without one")
	}
	if got := len(f.Endpoints[0].Spark); got != 2 {
		t.Errorf("spark points %d", got)
	}
}

// TestNoObservationsIsUnknown: a window with requests before it but none in
// it gives NaN percentiles and a count of 0, not 0 s.
func TestNoObservationsIsUnknown(t *testing.T) {
	e := New(Config{Window: 60 * time.Second}, []TargetInfo{{Name: "r"}})
	n := sources.NewNormalizer()
	e.Ingest(0, scrape(t, n, t0, base))
	e.Ingest(0, scrape(t, n, t0.Add(5*time.Second), base))
	s := e.Frame(t0.Add(5 * time.Second)).Endpoints[0].Stats
	approx(t, "p95", s.TTFT.P95, math.NaN())
	approx(t, "count", s.TTFT.Count, 0)
	approx(t, "gen rate", s.GenTokRate, 0)
	approx(t, "abort share", s.AbortShare, math.NaN())
}

// TestCounterReset: a restart between scrapes never yields a negative or
// spiking rate, and marks the endpoint restarted.
func TestCounterReset(t *testing.T) {
	// A 10 s window at t0+20 s starts at the t0+10 s scrape.
	e := New(Config{Window: 10 * time.Second, Interval: 10 * time.Second}, []TargetInfo{{Name: "r"}})
	n := sources.NewNormalizer()
	e.Ingest(0, scrape(t, n, t0, base))
	e.Ingest(0, scrape(t, n, t0.Add(10*time.Second), moved()))
	// The engine restarts: counters start again from zero.
	r := base
	r.gen, r.prompt, r.pre, r.pq, r.ph = 100, 400, 0, 50, 10
	r.ttft, r.ttftSum = []float64{1, 2, 4, 4}, 3
	r.stop, r.length, r.abrt = 4, 0, 0
	r.created, r.start = 1.8e9, 1.8e9
	t2 := t0.Add(20 * time.Second)
	e.Ingest(0, scrape(t, n, t2, r))
	f := e.Frame(t2)
	v := f.Endpoints[0]
	if !v.RestartedAt.Equal(t2) {
		t.Errorf("restart not marked: %v", v.RestartedAt)
	}
	s := v.Stats
	approx(t, "gen tok/s after reset", s.GenTokRate, 100.0/10)
	approx(t, "req/s after reset", s.ReqRate, 4.0/10)
	approx(t, "ttft count after reset", s.TTFT.Count, 4)
	approx(t, "ttft p50 after reset", s.TTFT.P50, 0.1+0.4*(2-1)/1)
	for _, p := range v.Spark {
		for i, x := range p.V {
			if x < 0 {
				t.Errorf("negative spark value %v in series %d", x, i)
			}
		}
	}
	// Over a window spanning the restart, increases add up across it.
	e.SetWindow(20 * time.Second)
	s = e.Frame(t2).Endpoints[0].Stats
	approx(t, "gen tok/s across reset", s.GenTokRate, (600.0+100)/20)
}

// TestCreatedRevealsRestart: after a restart the counter may already be above
// its old value by the next scrape; the changed _created timestamp still
// shows the reset, so the increase is the new value, not new - old.
func TestCreatedRevealsRestart(t *testing.T) {
	e := New(Config{Window: 60 * time.Second}, []TargetInfo{{Name: "r"}})
	n := sources.NewNormalizer()
	a := base
	a.start = 0
	e.Ingest(0, scrape(t, n, t0, a))
	b := moved()
	b.start = 0
	b.gen = 1200 // > 1000, yet a restart happened
	b.created = 1.9e9
	e.Ingest(0, scrape(t, n, t0.Add(10*time.Second), b))
	v := e.Frame(t0.Add(10 * time.Second)).Endpoints[0]
	approx(t, "gen tok/s", v.Stats.GenTokRate, 1200.0/10)
	if v.RestartedAt.IsZero() {
		t.Error("restart by _created not marked")
	}
}

// TestEnginesAggregate: two data-parallel engines of one endpoint. Counters
// and bucket rates add up; KV usage is weighted by each engine's capacity.
func TestEnginesAggregate(t *testing.T) {
	e := New(Config{Window: 60 * time.Second}, []TargetInfo{{Name: "dp"}})
	n := sources.NewNormalizer()
	a0, b0 := base, base
	b0.engine, b0.blocks = "1", 3000
	a1, b1 := moved(), moved()
	b1.engine, b1.blocks = "1", 3000
	a1.kv, b1.kv = 0.9, 0.1
	e.Ingest(0, scrape(t, n, t0, a0, b0))
	e.Ingest(0, scrape(t, n, t0.Add(10*time.Second), a1, b1))
	v := e.Frame(t0.Add(10 * time.Second)).Endpoints[0]
	s := v.Stats
	if len(v.Subs) != 2 || s.Engines != 2 {
		t.Fatalf("subs %d engines %d", len(v.Subs), s.Engines)
	}
	approx(t, "gen tok/s", s.GenTokRate, 2*60)
	approx(t, "kv weighted", s.KVUsage, (0.9*16000+0.1*48000)/64000)
	approx(t, "kv max engine", s.KVUsageMax, 0.9)
	approx(t, "capacity", s.KVCapacityTokens, 64000)
	approx(t, "running", s.Running, 24)
	// Identical engines: the merged distribution has the same percentiles
	// and twice the observations.
	approx(t, "ttft p50", s.TTFT.P50, 0.5+0.5*(42.5-20)/60)
	approx(t, "ttft count", s.TTFT.Count, 170)
	approx(t, "engine 1 kv", v.Subs[1].Stats.KVUsage, 0.1)
}

// TestFleetMergesBucketsNotPercentiles: the fleet p50 comes from the summed
// bucket rates, which differs from averaging the endpoints' p50s; endpoints
// with different bucket layouts merge on their shared bounds.
func TestFleetMergesBucketsNotPercentiles(t *testing.T) {
	e := New(Config{Window: 60 * time.Second}, []TargetInfo{{Name: "fast"}, {Name: "slow"}, {Name: "down"}})
	nf, ns := sources.NewNormalizer(), sources.NewNormalizer()
	fast0, fast1 := base, base
	fast0.ttft, fast1.ttft = []float64{0, 0, 0, 0}, []float64{90, 100, 100, 100} // 90 ≤0.1, 10 in (0.1,0.5]
	fast0.ttftBounds = []string{"0.1", "0.5", "1", "+Inf"}
	slow0, slow1 := base, base
	slow0.ttftBounds = []string{"0.1", "1", "+Inf"}
	slow1.ttftBounds = slow0.ttftBounds
	slow0.ttft, slow1.ttft = []float64{0, 0, 0}, []float64{0, 10, 10} // 10 in (0.1,1]
	e.Ingest(0, scrape(t, nf, t0, fast0))
	e.Ingest(0, scrape(t, nf, t0.Add(10*time.Second), fast1))
	e.Ingest(1, scrape(t, ns, t0, slow0))
	e.Ingest(1, scrape(t, ns, t0.Add(10*time.Second), slow1))
	e.Ingest(2, sources.Scrape{Target: "down", Time: t0, Err: errors.New("connection refused")})
	f := e.Frame(t0.Add(10 * time.Second))
	if f.Fleet.Up != 2 || f.Fleet.Total != 3 {
		t.Fatalf("up %d/%d", f.Fleet.Up, f.Fleet.Total)
	}
	q := f.Fleet.Stats.TTFT
	approx(t, "fleet count", q.Count, 110)
	// Shared bounds 0.1, 1, +Inf: cumulative 90, 110, 110 over 10 s.
	// p95: rank 104.5 in (0.1,1]: 0.1 + 0.9*(14.5/20).
	approx(t, "fleet p95", q.P95, 0.1+0.9*(104.5-90)/20)
	approx(t, "fleet gen tok/s", f.Fleet.Stats.GenTokRate, 0) // both flat
	if len(f.Fleet.Models) != 1 || f.Fleet.Models[0].Endpoints != 2 {
		t.Errorf("models %+v", f.Fleet.Models)
	}
	if d := f.Endpoints[2]; d.State != StateDown || d.LastError != "connection refused" {
		t.Errorf("down endpoint: %+v", d)
	}
}

func TestStates(t *testing.T) {
	e := New(Config{Window: 60 * time.Second, Interval: time.Second}, []TargetInfo{{Name: "a"}, {Name: "b"}})
	n := sources.NewNormalizer()
	if e.Frame(t0).Endpoints[0].State != StatePending {
		t.Error("not pending before the first poll")
	}
	e.Ingest(0, scrape(t, n, t0, base))
	if v := e.Frame(t0.Add(time.Second)).Endpoints[0]; v.State != StateUp || !v.Since.Equal(t0) {
		t.Errorf("up: %v since %v", v.State, v.Since)
	}
	// No answer for longer than StaleAfter (5 s): stale, since the moment it went quiet.
	v := e.Frame(t0.Add(7 * time.Second)).Endpoints[0]
	if v.State != StateStale || !v.Since.Equal(t0.Add(5*time.Second)) {
		t.Errorf("stale: %v since %v", v.State, v.Since)
	}
	e.Ingest(0, sources.Scrape{Target: "a", Time: t0.Add(8 * time.Second), Err: errors.New("timed out after 3s")})
	e.Ingest(0, sources.Scrape{Target: "a", Time: t0.Add(9 * time.Second), Err: errors.New("timed out after 3s")})
	v = e.Frame(t0.Add(9 * time.Second)).Endpoints[0]
	if v.State != StateDown || !v.Since.Equal(t0.Add(8*time.Second)) || v.LastError != "timed out after 3s" {
		t.Errorf("down: %+v", v)
	}
	// Numbers from before the outage stay, labelled by their age.
	if !v.LastSuccess.Equal(t0) || v.Stats.Running != 8 {
		t.Errorf("last known numbers lost: %v %v", v.LastSuccess, v.Stats.Running)
	}
}

// TestHistoryBounded: a long run keeps a bounded number of frames per
// sub-series, thinned to about a hundred per window.
func TestHistoryBounded(t *testing.T) {
	e := New(Config{Window: 60 * time.Second, Interval: 100 * time.Millisecond}, []TargetInfo{{Name: "r"}})
	n := sources.NewNormalizer()
	f := base
	for i := 0; i < 5000; i++ {
		f.gen += 10
		e.Ingest(0, scrape(t, n, t0.Add(time.Duration(i)*100*time.Millisecond), f))
	}
	for _, h := range e.eps[0].subs {
		if h.n > 110 || len(h.ring) > 110 {
			t.Errorf("%d frames kept (ring of %d) for a 60 s window", h.n, len(h.ring))
		}
	}
	s := e.Frame(t0.Add(4999 * 100 * time.Millisecond)).Endpoints[0].Stats
	approx(t, "rate over thinned history", s.GenTokRate, 100)
	if s.Span < 60*time.Second || s.Span > 61*time.Second {
		t.Errorf("span %v", s.Span)
	}
}

// TestSubSeriesCapped: an endpoint that exposes thousands of model names,
// new ones every scrape, keeps at most MaxSubs sub-series of history (the
// oldest evicted) and says so on the endpoint, instead of growing without bound.
func TestSubSeriesCapped(t *testing.T) {
	e := New(Config{Window: 60 * time.Second, Interval: time.Second, MaxSubs: 50}, []TargetInfo{{Name: "r"}})
	n := sources.NewNormalizer()
	n.MaxSubs = 1000 // the engine's own cap is under test
	for i := 0; i < 20; i++ {
		var body strings.Builder
		for j := 0; j < 300; j++ {
			fmt.Fprintf(&body, "vllm:num_requests_running{model_name=\"m%d-%d\"} 1\n", i, j)
		}
		snap, err := n.Normalize([]byte(body.String()), "text/plain")
		if err != nil {
			t.Fatal(err)
		}
		e.Ingest(0, sources.Scrape{Target: "r", Time: t0.Add(time.Duration(i) * time.Second), Data: snap})
		if n := len(e.eps[0].subs); n > 50 {
			t.Fatalf("scrape %d: %d sub-series of history, cap 50", i, n)
		}
	}
	v := e.Frame(t0.Add(20 * time.Second)).Endpoints[0]
	if !strings.Contains(strings.Join(v.Warnings, "\n"), "too many models/engines") {
		t.Errorf("no 'too many' state on the endpoint: %q", v.Warnings)
	}
	if len(v.Subs) > 50 {
		t.Errorf("%d sub-series in the view", len(v.Subs))
	}
}

// TestWindowPastHistoryClamped: a window past sources.MaxWindow (at
// New or by SetWindow) is that bound, and history stays within its rings
// whatever the window: at most MaxFrames frames a sub-series. Before, a
// window of 106,751 days was kept, and window plus its spacing (the
// retention) overflowed to a negative duration.
func TestWindowPastHistoryClamped(t *testing.T) {
	e := New(Config{Window: math.MaxInt64, Interval: 10 * time.Second}, []TargetInfo{{Name: "replica"}})
	if w := e.Config().Window; w != sources.MaxWindow {
		t.Errorf("window %s at New", w)
	}
	e.SetWindow(time.Minute)
	e.SetWindow(math.MaxInt64)
	if w := e.Config().Window; w != sources.MaxWindow {
		t.Errorf("window %s after SetWindow", w)
	}
	if r := e.retention(); r <= sources.MaxWindow {
		t.Errorf("retention %s", r)
	}
	n := sources.NewNormalizer()
	f := base
	for k := range 2000 { // 5.5 h of 10 s polls
		f.gen += 10
		e.Ingest(0, scrape(t, n, t0.Add(time.Duration(k)*10*time.Second), f))
	}
	for _, h := range e.eps[0].subs {
		if len(h.ring) > e.cfg.MaxFrames || h.n > e.cfg.MaxFrames {
			t.Errorf("%d frames in a ring of %d, bound %d", h.n, len(h.ring), e.cfg.MaxFrames)
		}
	}
}
