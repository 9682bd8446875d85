package detect

import (
	"math"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/ui/format"
)

// Frame builders for the rule tests: a healthy V1 endpoint whose numbers a
// case then pushes just below or just above a threshold.

var nan = math.NaN()

var t0 = time.Date(2026, 11, 22, 14, 2, 0, 0, time.UTC)

func qs(p50, p95, p99, n float64) diagnose.Quantiles {
	return diagnose.Quantiles{P50: p50, P90: (p50 + p95) / 2, P95: p95, P99: p99, Mean: p50, Count: n, Lowest: nan, Highest: nan}
}

func noQ() diagnose.Quantiles {
	return diagnose.Quantiles{P50: nan, P90: nan, P95: nan, P99: nan, Mean: nan, Count: 0, Lowest: nan, Highest: nan}
}

// healthyStats is a V1 engine at moderate load, well inside the chat SLO.
func healthyStats() diagnose.Stats {
	return diagnose.Stats{
		Span: time.Minute, Engines: 1,
		TTFT: qs(0.12, 0.25, 0.35, 300), ITL: qs(0.02, 0.03, 0.04, 50000), TPOT: qs(0.02, 0.03, 0.04, 300),
		E2E: qs(3, 6, 8, 300), Queue: qs(0.005, 0.02, 0.05, 300), Prefill: qs(0.05, 0.1, 0.2, 300), Decode: qs(3, 5, 7, 300),
		KVUsage: 0.4, KVUsageMax: 0.4, KVCapacityTokens: 27000 * 16, NumGPUBlocks: 27000, BlockSize: 16, GPUMemUtil: 0.9,
		PrefixCaching: sources.TriYes, PrefixHitRatio: 0.35, PrefixQueryRate: 3000, PreemptionsRate: 0,
		Swapped: nan, CPUKVUsage: nan, Running: 20, Waiting: 0, WaitingCapacity: nan, WaitingDeferred: nan,
		PromptTokRate: 3000, GenTokRate: 900, ReqRate: 5, AbortShare: 0.01,
		Finish:     []diagnose.FinishShare{{Reason: "abort", PerSec: 0.05, Share: 0.01}, {Reason: "length", PerSec: 0.5, Share: 0.1}, {Reason: "stop", PerSec: 4.45, Share: 0.89}},
		ErrorShare: 0, RejectRate: nan, Sleep: diagnose.SleepAwake,
		AvgPromptLen: 600, AvgGenLen: 180, MeanIterTokens: 80, IterTokens: qs(64, 900, 2000, 3000), IterTokensByToken: qs(64, 900, 2000, 3000), PromptCachedRate: 1000,
	}
}

func healthyV0Stats() diagnose.Stats {
	s := healthyStats()
	s.Swapped, s.CPUKVUsage = 0, 0
	s.PrefixCaching, s.PrefixQueryRate = sources.TriNo, nan
	s.PrefixHitRatio = nan
	return s
}

var (
	v1 = sources.VersionRange{Gen: sources.GenV1, Min: sources.V(0, 10, 1), Max: sources.V(0, 10, 1)}
	v0 = sources.VersionRange{Gen: sources.GenV0, Min: sources.V(0, 6, 4), Max: sources.V(0, 6, 6)}
)

func upEndpoint(name string, st diagnose.Stats) diagnose.EndpointView {
	return diagnose.EndpointView{Name: name, State: diagnose.StateUp, Since: t0.Add(-time.Hour), Kind: sources.KindEngine, Version: v1,
		Models: []string{"m"}, RSS: 1 << 30, Stats: st, Subs: []diagnose.SubView{{Key: sources.SubKey{Model: "m", Engine: "0"}, Stats: st}},
		Cache:       &sources.CacheConfig{BlockSize: 16, NumGPUBlocks: 27000, GPUMemUtil: 0.9, PrefixCaching: sources.TriYes, CacheDtype: "auto"},
		LastSuccess: t0, LastAttempt: t0, ScrapeDuration: 5 * time.Millisecond, Samples: 400}
}

// world is a fleet that evolves second by second; mut shapes each frame.
type world struct {
	d      *Detector
	window time.Duration
	eps    []diagnose.EndpointView
	sparks [][]diagnose.SparkPoint
	// The local GPUs as the engine would hand them over.
	gpu    sources.GPUSnapshot
	series []diagnose.GPUSeries
	events []sources.GPUEvent
}

// addGPUReading appends one reading of every GPU to the world's history.
func (w *world) addGPUReading(now time.Time, gpus ...sources.GPU) {
	w.gpu = sources.GPUSnapshot{Time: now, Source: "test", GPUs: gpus}
	for len(w.series) < len(gpus) {
		w.series = append(w.series, diagnose.GPUSeries{})
	}
	for i := range gpus {
		g := &gpus[i]
		s := &w.series[i]
		s.Index, s.UUID, s.Name = g.Index, g.UUID, g.Name
		if g.Stale {
			continue // as the engine: a stale reading adds no point
		}
		p := diagnose.NewGPUPoint(now, g)
		s.Points = append(s.Points, p)
		if !p.Throttled() {
			s.ThrottledSince = time.Time{}
		} else if s.ThrottledSince.IsZero() {
			s.ThrottledSince = now
		}
	}
}

func newWorld(t *testing.T, cfg RulesConfig, eps ...diagnose.EndpointView) *world {
	t.Helper()
	d, err := NewDetector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &world{d: d, window: time.Minute, eps: eps, sparks: make([][]diagnose.SparkPoint, len(eps))}
}

// frame builds the frame at now: each endpoint's view with its sparkline
// extended by the current running/waiting, then the detector's verdict.
func (w *world) frame(now time.Time) *diagnose.Frame {
	f := &diagnose.Frame{Time: now, Window: w.window, Interval: time.Second, Endpoints: make([]diagnose.EndpointView, len(w.eps))}
	models := map[string]int{}
	for i := range w.eps {
		ep := w.eps[i]
		ep.Index = i
		if ep.State == diagnose.StateUp {
			ep.LastSuccess, ep.LastAttempt = now, now
			p := diagnose.SparkPoint{UnixMilli: now.UnixMilli()}
			for k := range p.V {
				p.V[k] = float32(nan)
			}
			p.V[diagnose.SpRunning], p.V[diagnose.SpWaiting] = float32(ep.Stats.Running), float32(ep.Stats.Waiting)
			p.V[diagnose.SpGenTok], p.V[diagnose.SpReq] = float32(ep.Stats.GenTokRate), float32(ep.Stats.ReqRate)
			w.sparks[i] = append(w.sparks[i], p)
			if n := len(w.sparks[i]); n > 240 {
				w.sparks[i] = w.sparks[i][n-240:]
			}
			f.Fleet.Up++
			for _, m := range ep.Models {
				models[m]++
			}
		}
		ep.Spark = w.sparks[i]
		ep.Trend = diagnose.TrendOf(ep.Spark, now, w.window)
		f.Endpoints[i] = ep
		f.Fleet.Total++
	}
	for m, n := range models {
		f.Fleet.Models = append(f.Fleet.Models, diagnose.ModelView{Model: m, Endpoints: n})
	}
	f.GPU, f.GPUSeries, f.GPUEvents = w.gpu, w.series, w.events
	w.d.Evaluate(f)
	return f
}

// run evaluates a frame every step from start for d and returns every frame.
func (w *world) run(start time.Time, d, step time.Duration, mut func(now time.Time, w *world)) []*diagnose.Frame {
	var out []*diagnose.Frame
	for at := start; !at.After(start.Add(d)); at = at.Add(step) {
		if mut != nil {
			mut(at, w)
		}
		out = append(out, w.frame(at))
	}
	return out
}

// firstFiring returns when rule first appears among a frame's findings.
func firstFiring(frames []*diagnose.Frame, rule string) (time.Time, *diagnose.Finding) {
	for _, f := range frames {
		for i := range f.Findings {
			if f.Findings[i].Rule == rule {
				return f.Time, &f.Findings[i]
			}
		}
	}
	return time.Time{}, nil
}

func findingOf(f *diagnose.Frame, rule string) *diagnose.Finding {
	for i := range f.Findings {
		if f.Findings[i].Rule == rule {
			return &f.Findings[i]
		}
	}
	return nil
}

// txt spells a finding's sentence as the screens and the report do.
func txt(t diagnose.Text) string { return format.Say(t) }

// spell spells one value as the screens do.
func spell(v diagnose.Value) string { return format.Value(v) }
