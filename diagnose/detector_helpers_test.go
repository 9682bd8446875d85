package diagnose

import (
	"math"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// Frame builders for the rule tests: a healthy V1 endpoint whose numbers a
// case then pushes just below or just above a threshold.

var nan = math.NaN()

func qs(p50, p95, p99, n float64) Quantiles {
	return Quantiles{P50: p50, P90: (p50 + p95) / 2, P95: p95, P99: p99, Mean: p50, Count: n, Lowest: nan, Highest: nan}
}

func noQ() Quantiles {
	return Quantiles{P50: nan, P90: nan, P95: nan, P99: nan, Mean: nan, Count: 0, Lowest: nan, Highest: nan}
}

// healthyStats is a V1 engine at moderate load, well inside the chat SLO.
func healthyStats() Stats {
	return Stats{
		Span: time.Minute, Engines: 1,
		TTFT: qs(0.12, 0.25, 0.35, 300), ITL: qs(0.02, 0.03, 0.04, 50000), TPOT: qs(0.02, 0.03, 0.04, 300),
		E2E: qs(3, 6, 8, 300), Queue: qs(0.005, 0.02, 0.05, 300), Prefill: qs(0.05, 0.1, 0.2, 300), Decode: qs(3, 5, 7, 300),
		KVUsage: 0.4, KVUsageMax: 0.4, KVCapacityTokens: 27000 * 16, NumGPUBlocks: 27000, BlockSize: 16, GPUMemUtil: 0.9,
		PrefixCaching: sources.TriYes, PrefixHitRatio: 0.35, PrefixQueryRate: 3000, PreemptionsRate: 0,
		Swapped: nan, CPUKVUsage: nan, Running: 20, Waiting: 0, WaitingCapacity: nan, WaitingDeferred: nan,
		PromptTokRate: 3000, GenTokRate: 900, ReqRate: 5, AbortShare: 0.01,
		Finish:     []FinishShare{{"abort", 0.05, 0.01}, {"length", 0.5, 0.1}, {"stop", 4.45, 0.89}},
		ErrorShare: 0, RejectRate: nan, Sleep: SleepAwake,
		AvgPromptLen: 600, AvgGenLen: 180, MeanIterTokens: 80, IterTokens: qs(64, 900, 2000, 3000), IterTokensByToken: qs(64, 900, 2000, 3000), PromptCachedRate: 1000,
	}
}

func healthyV0Stats() Stats {
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

func upEndpoint(name string, st Stats) EndpointView {
	return EndpointView{Name: name, State: StateUp, Since: t0.Add(-time.Hour), Kind: sources.KindEngine, Version: v1,
		Models: []string{"m"}, RSS: 1 << 30, Stats: st, Subs: []SubView{{Key: sources.SubKey{Model: "m", Engine: "0"}, Stats: st}},
		Cache:       &sources.CacheConfig{BlockSize: 16, NumGPUBlocks: 27000, GPUMemUtil: 0.9, PrefixCaching: sources.TriYes, CacheDtype: "auto"},
		LastSuccess: t0, LastAttempt: t0, ScrapeDuration: 5 * time.Millisecond, Samples: 400}
}

// world is a fleet that evolves second by second; mut shapes each frame.
type world struct {
	d      *Detector
	window time.Duration
	eps    []EndpointView
	sparks [][]SparkPoint
	// The local GPUs as the engine would hand them over.
	gpu    sources.GPUSnapshot
	series []GPUSeries
	events []sources.GPUEvent
}

// addGPUReading appends one reading of every GPU to the world's history.
func (w *world) addGPUReading(now time.Time, gpus ...sources.GPU) {
	w.gpu = sources.GPUSnapshot{Time: now, Source: "test", GPUs: gpus}
	for len(w.series) < len(gpus) {
		w.series = append(w.series, GPUSeries{})
	}
	for i := range gpus {
		g := &gpus[i]
		s := &w.series[i]
		s.Index, s.UUID, s.Name = g.Index, g.UUID, g.Name
		p := NewGPUPoint(now, g)
		s.Points = append(s.Points, p)
		if !p.Throttled() {
			s.ThrottledSince = time.Time{}
		} else if s.ThrottledSince.IsZero() {
			s.ThrottledSince = now
		}
	}
}

func newWorld(t *testing.T, cfg RulesConfig, eps ...EndpointView) *world {
	t.Helper()
	d, err := NewDetector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &world{d: d, window: time.Minute, eps: eps, sparks: make([][]SparkPoint, len(eps))}
}

// frame builds the frame at now: each endpoint's view with its sparkline
// extended by the current running/waiting, then the detector's verdict.
func (w *world) frame(now time.Time) *Frame {
	f := &Frame{Time: now, Window: w.window, Interval: time.Second, Endpoints: make([]EndpointView, len(w.eps))}
	models := map[string]int{}
	for i := range w.eps {
		ep := w.eps[i]
		ep.Index = i
		if ep.State == StateUp {
			ep.LastSuccess, ep.LastAttempt = now, now
			p := SparkPoint{UnixMilli: now.UnixMilli()}
			for k := range p.V {
				p.V[k] = float32(nan)
			}
			p.V[SpRunning], p.V[SpWaiting] = float32(ep.Stats.Running), float32(ep.Stats.Waiting)
			p.V[SpGenTok], p.V[SpReq] = float32(ep.Stats.GenTokRate), float32(ep.Stats.ReqRate)
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
		ep.Trend = TrendOf(ep.Spark, now, w.window)
		f.Endpoints[i] = ep
		f.Fleet.Total++
	}
	for m, n := range models {
		f.Fleet.Models = append(f.Fleet.Models, ModelView{Model: m, Endpoints: n})
	}
	f.GPU, f.GPUSeries, f.GPUEvents = w.gpu, w.series, w.events
	w.d.Evaluate(f)
	return f
}

// run evaluates a frame every step from start for d and returns every frame.
func (w *world) run(start time.Time, d, step time.Duration, mut func(now time.Time, w *world)) []*Frame {
	var out []*Frame
	for at := start; !at.After(start.Add(d)); at = at.Add(step) {
		if mut != nil {
			mut(at, w)
		}
		out = append(out, w.frame(at))
	}
	return out
}

// firstFiring returns when rule first appears among a frame's findings.
func firstFiring(frames []*Frame, rule string) (time.Time, *Finding) {
	for _, f := range frames {
		for i := range f.Findings {
			if f.Findings[i].Rule == rule {
				return f.Time, &f.Findings[i]
			}
		}
	}
	return time.Time{}, nil
}

func findingOf(f *Frame, rule string) *Finding {
	for i := range f.Findings {
		if f.Findings[i].Rule == rule {
			return &f.Findings[i]
		}
	}
	return nil
}
