package detect

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// memory_leak parameters, looked up by name: a check indexes its values
// through these.
var (
	mlParams = params{
		{"window", 600, "s", "how far back the growth is fitted (history is kept for 64 minutes)"},
		{"slope", 8, "MiB/min", "resident memory growth that counts as a leak"},
		{"gpu_slope", 4, "MiB/min", "GPU memory growth that counts as a leak"},
		{"r2", 0.8, "ratio", "how well a straight line must fit the growth"},
		{"load_change", 0.25, "ratio", "relative change of load that still counts as flat"},
		{"min_span", 120, "s", "the least history a steep growth is fitted over"},
		{"steep", 64, "MiB/min", "growth steep enough to judge from min_span of history; slower growth needs history in proportion (min_span × steep ÷ growth), up to 80% of window"},
		{"steep_r2", 0.95, "ratio", "how well a line must fit a steep growth over a short history"},
		{"critical_time", 3600, "s", "projected time to exhaustion under which it is critical"},
	}
	mlWindow     = mlParams.index("window")
	mlSlope      = mlParams.index("slope")
	mlGPUSlope   = mlParams.index("gpu_slope")
	mlR2         = mlParams.index("r2")
	mlLoadChange = mlParams.index("load_change")
	mlMinSpan    = mlParams.index("min_span")
	mlSteep      = mlParams.index("steep")
	mlSteepR2    = mlParams.index("steep_r2")
	mlCritical   = mlParams.index("critical_time")
)

const mib1 = 1 << 20

var ruleMemoryLeak = &Rule{
	ID: "memory_leak", Title: "Memory leak", Scope: ScopeEndpoint,
	memory:   func() ruleMemory { return &leakMemory{} },
	Catches:  "Memory that only grows while the work stays the same: the API server's resident memory, or the GPU memory its processes hold, rising steadily over tens of minutes with flat load and completions. It ends in an OOM kill.",
	Needs:    "process_resident_memory_bytes (single-process registry; not in multiprocess mode) or the GPU memory of the endpoint's processes (vtop on the node); finished requests",
	Cond:     "over the history there is, up to {window}: resident memory rising ≥ {slope} (or GPU memory ≥ {gpu_slope}) on a steady line (R² ≥ {r2}) over ≥ 80% of {window}, or on a line with R² ≥ {steep_r2} over ≥ {min_span} × {steep} ÷ its growth (at least {min_span}); while finished requests/s and generated tokens/s change by < {load_change} between the first and last third; the hold counts from the start of the fitted line, so history read at opening (a backfill, a replay) counts",
	Clear:    "growth below half the threshold, or no longer steady (R² < 0.5)",
	Severity: "warning; critical when the projected time to exhaustion (GPU memory: to the devices' total; resident memory: to the cgroup's or host's memory when the endpoint is local, else its doubling time) is under {critical_time}",
	Action:   "plan a restart before it runs out; capture where the memory goes first (heap profile); look at multimodal caches and request logging; upgrade vLLM",
	For:      10 * time.Minute, ResolveFor: 10 * time.Minute,
	Params: mlParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		l := leakOf(x, u, p)
		switch {
		case !l.known:
			return condUnknown, 0
		case l.leaking && l.flat:
			f, th := l.rss, p[mlSlope]
			if l.gpuLeak && !l.rssLeak {
				f, th = l.gpu, p[mlGPUSlope]
			}
			x.over = f.Slope * 60 / mib1 / th
			// The line says the growth has held over its span: history
			// read at opening counts toward the hold.
			x.since = x.now.Add(-f.Span)
			if left := l.exhaustion(x, u).left; left > 0 && left < seconds(p[mlCritical]) {
				return condMet, diagnose.SevCritical
			}
			return condMet, diagnose.SevWarning
		case !l.rising:
			return condClear, 0
		}
		return condHold, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		l := leakOf(x, u, p)
		f, what := l.rss, "resident memory"
		if l.gpuLeak && !l.rssLeak {
			f, what = l.gpu, "GPU memory"
		}
		w := f.Span
		rate := f.Slope * 60 / mib1
		fd.Summary = say("%s +%s in %s (%s MiB/min, R² %.2f) while load stays at %s req/s",
			what, mib(f.Last-f.First), dur(w), dec(rate, 1), f.R2, num(l.reqLate))
		fd.Evidence = []diagnose.Evidence{
			evNum(what+" now", f.RawMax, diagnose.UnitBytes, 0),
			evNum(what+" growth", f.Slope, diagnose.UnitBytesPerSec, w), evNum(what+" fit R²", f.R2, diagnose.UnitNumber, w),
			evNum("finished, early", l.reqEarly, diagnose.UnitReqPerSec, w), evNum("finished, late", l.reqLate, diagnose.UnitReqPerSec, w),
			evNum("generated, early", l.genEarly, diagnose.UnitTokPerSec, w), evNum("generated, late", l.genLate, diagnose.UnitTokPerSec, w),
		}
		if l.gpuLeak && l.rssLeak {
			fd.Evidence = append(fd.Evidence, evNum("GPU memory growth", l.gpu.Slope, diagnose.UnitBytesPerSec, l.gpu.Span), evNum("GPU memory fit R²", l.gpu.R2, diagnose.UnitNumber, l.gpu.Span))
		}
		if e := l.exhaustion(x, u); e.left > 0 {
			fd.Evidence = append(fd.Evidence, evNum("time to exhaustion", e.left.Seconds(), diagnose.UnitSeconds, 0), ev("limit", e.limit, 0))
			if e.limit != limDoubling {
				fd.Evidence = append(fd.Evidence, evNum("limit size", e.lim, diagnose.UnitBytes, 0), evNum("memory left", e.room, diagnose.UnitBytes, 0))
			}
			fd.Summary = fd.Summary.Add("; %s in about %s", e.words(), dur(e.left))
		}
		fd.Explain = plain("Memory keeps growing on a straight line while the work done stays the same, so it is not load: something is kept per request and never freed (caches without a bound, references held by logging or metrics, fragmentation). It ends when the process is OOM-killed.")
		fd.Action = plain("restart the API server in a quiet moment before it runs out; before that, capture where memory goes (py-spy dump, tracemalloc); check multimodal input caches and request logging; upgrade if a newer vLLM fixes it")
	},
	prom: func(g *promGen, p []float64) []promAlert {
		rss := g.procName(sources.PRSS)
		w := g.dur(seconds(p[mlWindow]))
		// min_over_time of a shorter slope stands in for the R² test: the
		// growth must hold through the whole window, not come from one step.
		fin := g.labeledRate(sources.LFinished, "", "job, instance")
		before := g.labeledRateAt(sources.LFinished, "", "job, instance", seconds(p[mlWindow]))
		return []promAlert{{Severity: "warning", Expr: fmt.Sprintf(
			"min_over_time(deriv(%s[5m])[%s:1m]) * 60 / 1048576 >= %s and on(job, instance) abs((%s) - (%s)) <= %s * (%s)",
			rss, w, g.num(p[mlSlope]), fin, before, g.num(p[mlLoadChange]), fin)}}
	},
}

// exhaustion projects when the growing memory runs out: GPU memory to the
// devices' total; resident memory to the cgroup's or host's memory when the
// endpoint is local (read in sources, carried on its process tree), else to
// its doubling. how names the projection.
// exhaustion is when a leak runs out: left is 0 when no limit or pace is
// known; limit names it ("GPU memory", the host or cgroup limit,
// "doubling"), of size lim bytes with room bytes left (for doubling, room
// is the memory it doubles from and lim is 0).
type exhaustion struct {
	left      time.Duration
	limit     string
	lim, room float64
}

// words is the projection as the summary says it.
func (e exhaustion) words() diagnose.Text {
	switch {
	case e.limit == limGPU:
		return say("GPU memory full: %s left", mib(e.room))
	case e.limit == limDoubling:
		return say("resident memory doubles from %s", mib(e.room))
	}
	return say("%s (%s) reached: %s left", e.limit, mib(e.lim), mib(e.room))
}

const (
	limGPU      = "GPU memory"
	limDoubling = "doubling"
)

func (l *leak) exhaustion(x *evalCtx, u *unit) exhaustion {
	// The nearer of the limits known wins; doubling is no limit, only a pace.
	var e exhaustion
	// GPU memory rising on a steady line is a limit known, even before
	// its own history is long enough to call it a leak: the projection
	// must not swing from the resident memory's doubling to the GPU's
	// total as that history fills.
	if l.gpuLeak || (l.rssLeak && l.gpu.N >= 6 && !bad(l.gpu.R2) && l.gpu.R2 >= 0.8) {
		used, total := endpointGPUMem(x.f, u.ep)
		if !bad(used) && !bad(total) && total > used && l.gpu.Slope > 0 {
			e = exhaustion{time.Duration((total - used) / l.gpu.Slope * float64(time.Second)), limGPU, total, total - used}
		}
	}
	if lim := u.ep.GPU.MemLimit; l.rssLeak && l.rss.Slope > 0 && l.rss.RawMax > 0 && lim > l.rss.RawMax {
		// Other processes share the limit, so this is the latest it runs out.
		if d := time.Duration((lim - l.rss.RawMax) / l.rss.Slope * float64(time.Second)); e.left == 0 || d < e.left {
			e = exhaustion{d, u.ep.GPU.MemLimitFrom, lim, lim - l.rss.RawMax}
		}
	}
	if e.left == 0 && l.rssLeak && l.rss.Slope > 0 && l.rss.RawMax > 0 {
		return exhaustion{time.Duration(l.rss.RawMax / l.rss.Slope * float64(time.Second)), limDoubling, 0, l.rss.RawMax}
	}
	return e
}

// leak is one evaluation of the memory-growth test.
type leak struct {
	known, rising, leaking, flat bool
	rssLeak, gpuLeak             bool
	rss, gpu                     Fit
	reqEarly, reqLate            float64
	genEarly, genLate            float64
}

// leakMemory is memory_leak's memory of an endpoint: a long downsampled
// history of its memory and load (the engine's rings hold one window),
// started afresh at each restart, and the last verdict.
type leakMemory struct {
	long    longHistory
	memo    leakMemo
	restart time.Time
}

func (m *leakMemory) observe(ep *diagnose.EndpointView, now time.Time) {
	if !ep.RestartedAt.IsZero() && !ep.RestartedAt.Equal(m.restart) {
		// A new process: memory starts again from its load-time size.
		m.restart = ep.RestartedAt
		m.long.reset()
	}
	if ep.State == diagnose.StateUp && ep.Kind == sources.KindEngine {
		m.long.observe(ep, now)
	}
}

// leakMemo keeps the last verdict: the history only changes every
// longStep, and fitting it on every poll is the detector's largest cost.
type leakMemo struct {
	newest time.Time
	n      int
	params []float64
	l      leak
}

func leakOf(x *evalCtx, u *unit, p []float64) leak {
	mem := memoryOf[*leakMemory](u)
	h, m := &mem.long, &mem.memo
	if n := len(h.pts); n > 0 && m.n == n && m.newest.Equal(h.pts[n-1].t) && slices.Equal(m.params, p) {
		return m.l
	}
	l := fitLeak(x, u, p)
	if n := len(h.pts); n > 0 {
		m.n, m.newest, m.l = n, h.pts[n-1].t, l
		m.params = append(m.params[:0], p...)
	}
	return l
}

func fitLeak(x *evalCtx, u *unit, p []float64) leak {
	var l leak
	w := seconds(p[mlWindow])
	pts := memoryOf[*leakMemory](u).long.window(x.now, w)
	if len(pts) < 6 {
		return l
	}
	l.rss = fitLine(pts, func(q *longPoint) float64 { return q.rss })
	l.gpu = fitLine(pts, func(q *longPoint) float64 { return q.gpuMem })
	// The full window, or a shorter history when the growth is steep and
	// the line fits it closely (a fast leak must not wait ten minutes).
	// Between the two, the history a line needs shrinks as its pace
	// grows: a 60 MiB/min leak is as plain after two minutes as an
	// 8 MiB/min one after eight (five minutes of backfilled history
	// name it at opening).
	long := func(f Fit) bool { return f.Span >= w*8/10 }
	short := func(f Fit, th float64) bool {
		pace := f.Slope * 60 / mib1
		need := min(w*8/10, time.Duration(float64(seconds(p[mlMinSpan]))*p[mlSteep]/max(pace, 1e-9)))
		return f.Span >= max(need, seconds(p[mlMinSpan])) && pace >= th && !bad(f.R2) && f.R2 >= p[mlSteepR2]
	}
	enough := func(f Fit, th float64) bool { return f.N >= 6 && !bad(f.Slope) && (long(f) || short(f, th)) }
	rssOK, gpuOK := enough(l.rss, p[mlSlope]), enough(l.gpu, p[mlGPUSlope])
	if !rssOK && !gpuOK {
		return l
	}
	l.reqEarly, l.reqLate = thirds(pts, func(q *longPoint) float64 { return q.req })
	l.genEarly, l.genLate = thirds(pts, func(q *longPoint) float64 { return q.gen })
	if bad(l.reqEarly) || bad(l.reqLate) {
		return l
	}
	l.known = true
	steady := func(f Fit) bool { return !bad(f.R2) && f.R2 >= p[mlR2] }
	perMin := func(f Fit) float64 { return f.Slope * 60 / mib1 }
	l.rssLeak = rssOK && perMin(l.rss) >= p[mlSlope] && steady(l.rss)
	l.gpuLeak = gpuOK && perMin(l.gpu) >= p[mlGPUSlope] && steady(l.gpu)
	l.leaking = l.rssLeak || l.gpuLeak
	still := func(f Fit, th float64) bool {
		return perMin(f) >= th/2 && !bad(f.R2) && f.R2 >= 0.5
	}
	l.rising = (rssOK && still(l.rss, p[mlSlope])) || (gpuOK && still(l.gpu, p[mlGPUSlope]))
	// Running requests are an instant gauge that bursts swing; the rates
	// over the window say whether the work changed.
	l.flat = flat(l.reqEarly, l.reqLate, p[mlLoadChange]) && (bad(l.genEarly) || bad(l.genLate) || flat(l.genEarly, l.genLate, p[mlLoadChange]))
	return l
}

// flat reports whether a and b differ by less than change relative to the
// larger one.
func flat(a, b, change float64) bool {
	m := math.Max(math.Abs(a), math.Abs(b))
	if m == 0 {
		return true
	}
	return math.Abs(a-b)/m < change
}
