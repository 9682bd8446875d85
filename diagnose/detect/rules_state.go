package detect

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// Rules about the engine's own state: KV saturation without a preemption
// counter, a stalled engine, failed and rejected requests, and engines
// that report sleeping or paused.

// kv_cache_saturated parameters, looked up by name.
var (
	ksParams = params{
		{"kv_high", 0.95, "ratio", "KV usage at or above which the cache is pinned"},
		{"kv_clear", 0.90, "ratio", "KV usage below which it clears"},
		{"waiting", 5, "count", "waiting requests that count as a queue (the hold shrinks as the queue grows past it)"},
		{"headroom", 0.15, "ratio", "share of KV blocks the recommended --max-num-seqs leaves free"},
	}
	ksHigh     = ksParams.index("kv_high")
	ksClear    = ksParams.index("kv_clear")
	ksWaiting  = ksParams.index("waiting")
	ksHeadroom = ksParams.index("headroom")
)

var ruleKVSaturated = &Rule{
	ID: "kv_cache_saturated", Title: "KV cache saturated", Scope: ScopeEngine,
	Catches:    "The KV cache pinned full while requests queue: the cache, not the batch cap, limits concurrency. Needs no preemption counter (older V1, trimmed exporters, simulators), so it is seen where kv_cache_thrashing cannot be.",
	Needs:      "KV usage and the waiting gauge",
	Cond:       "KV usage ≥ {kv_high} with at least one request waiting",
	Clear:      "KV usage < {kv_clear}, or nothing waiting",
	Severity:   "warning; critical when as many requests wait as run",
	Action:     "more KV capacity (--kv-cache-dtype fp8, --gpu-memory-utilization up to 0.90) or another replica; the --max-num-seqs that fits with {headroom} headroom (computed from the cache config and from what running sequences hold now); first, when the prefix-cache hit rate fell to matching nothing shared before the cache filled (a workload change), restore the shared prefix: each request now holds its own copy of it",
	For:        time.Minute,
	ResolveFor: time.Minute,
	Params:     ksParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		kv, wait, run := u.st.KVUsage, u.st.Waiting, u.st.Running
		switch {
		case bad(kv) || bad(wait):
			return condUnknown, 0
		case kv < p[ksClear] || wait < 1:
			return condClear, 0
		case kv >= p[ksHigh]:
			x.over = wait / p[ksWaiting]
			if !bad(run) && wait >= run {
				return condMet, diagnose.SevCritical
			}
			return condMet, diagnose.SevWarning
		}
		return condHold, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st := u.st
		fd.Summary = say("KV %s with %s running and %s waiting", pct(st.KVUsage), num(st.Running), num(st.Waiting)).Cat(afterWorkload(u, pressureSince(x, fd)))
		fd.Evidence = kvEvidence(u, st.Span)
		fd.Explain = plain("Every KV block is in use and requests wait for blocks to free up: the cache bounds how many sequences run, so queued requests wait for running ones to finish (and, with a preemption counter, you would see running ones evicted). New capacity or shorter sequences are what help.")
		fd.Flags, fd.Action = kvAdvice(x, u, p[ksHeadroom], pressureSince(x, fd))
	},
	prom: func(g *promGen, p []float64) []promAlert {
		return []promAlert{{Severity: "warning", Expr: fmt.Sprintf("%s >= %s and %s >= 1",
			g.gauge(sources.GKVUsage, "max", byEngine), g.num(p[ksHigh]), g.gauge(sources.GWaiting, "sum", byEngine))}}
	},
}

// engine_stalled parameters.
var (
	esParams = params{
		{"min_span", 5, "s", "how long no token and no completion must be seen before the condition counts"},
	}
	esMinSpan = esParams.index("min_span")
)

var ruleEngineStalled = &Rule{
	ID: "engine_stalled", Title: "Engine stalled", Scope: ScopeEndpoint,
	Catches:  "Requests are held (running or waiting) but no token is generated and none completes while /metrics answers: a hung engine (a dead worker, a NCCL hang, a stuck step) that /health still reports as 200. The most reported vLLM failure.",
	Needs:    "generation-token and finished-request counters, running/waiting gauges; sleeping or paused engines are exempt",
	Cond:     "running + waiting > 0 with no generated token and no finished request at every scrape for ≥ {min_span}",
	Clear:    "a token or a completion",
	Severity: "critical",
	Action:   "the engine is hung: check its log for the last step (NCCL timeouts, a dead worker, CUDA errors), then restart it; /health does not catch this, alert on this rule",
	For:      30 * time.Second, ResolveFor: 30 * time.Second,
	Params: esParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		if resting(u.st) {
			return condClear, 0
		}
		since, c := stalledSince(x, u.ep)
		if c != condMet {
			return c, 0
		}
		if x.now.Sub(since) < seconds(p[esMinSpan]) {
			return condHold, 0
		}
		x.since = since
		return condMet, diagnose.SevCritical
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st := u.st
		since, _ := stalledSince(x, u.ep)
		fd.Summary = say("%s running, %s waiting, no token and no completion for %s while /metrics answers", num(st.Running), num(st.Waiting), dur(x.now.Sub(since)))
		fd.Evidence = []diagnose.Evidence{evNum("running", st.Running, diagnose.UnitCount, 0), evNum("waiting", st.Waiting, diagnose.UnitCount, 0),
			evNum("no tokens or completions for", x.now.Sub(since).Seconds(), diagnose.UnitSeconds, 0), evNum("generation", st.GenTokRate, diagnose.UnitTokPerSec, st.Span),
			evNum("last scrape", u.ep.ScrapeDuration.Seconds(), diagnose.UnitSeconds, 0)}
		fd.Explain = plain("The server answers /metrics, so it is up, and it holds requests, but the engine produces nothing: no token generated and no request finished. vLLM's /health only checks that the engine process is alive, so a hung step passes it.")
		fd.Action = plain("restart the engine; first save its log (the last step, NCCL or CUDA errors, a worker that died) to find why it hung")
	},
	prom: func(g *promGen, p []float64) []promAlert {
		return []promAlert{{Severity: "critical", Expr: fmt.Sprintf("(%s + %s) > 0 and %s == 0 and %s == 0",
			g.gauge(sources.GRunning, "sum", byEndpoint), g.gauge(sources.GWaiting, "sum", byEndpoint),
			g.rate(sources.CGenTokens, byEndpoint), g.labeledRate(sources.LFinished, "", byEndpoint))}}
	},
}

// stalledSince walks the endpoint's sparkline back from now: the oldest
// point of the current run with requests held and neither tokens nor
// completions. condMet when the newest point is such a point, condClear
// when it shows work, condUnknown when the signals are not there.
func stalledSince(x *evalCtx, ep *diagnose.EndpointView) (time.Time, cond) {
	pts := ep.Spark
	var since time.Time
	for i := len(pts) - 1; i >= 0; i-- {
		v := &pts[i].V
		gen, req, run, wait := float64(v[diagnose.SpGenTok]), float64(v[diagnose.SpReq]), float64(v[diagnose.SpRunning]), float64(v[diagnose.SpWaiting])
		if bad(gen) || bad(req) || bad(run) || bad(wait) {
			if since.IsZero() {
				return since, condUnknown
			}
			break
		}
		if gen > 0 || req > 0 || run+wait < 1 {
			if since.IsZero() {
				return since, condClear
			}
			break
		}
		since = pts[i].Time()
	}
	if since.IsZero() {
		return since, condUnknown
	}
	return since, condMet
}

// resting reports an engine that says it is asleep or paused: idle by
// design, not stalled, underused or failing.
func resting(st *diagnose.Stats) bool {
	return st.Sleep == diagnose.SleepAsleep || st.Paused == sources.TriYes
}

var ruleEngineResting = &Rule{
	ID: "engine_sleeping", Title: "Engine asleep or paused", Scope: ScopeEndpoint,
	Catches:  "An engine that reports itself asleep (engine_sleep_state, /sleep: weights offloaded or discarded) or paused: it serves nothing by design. Shown so the idle GPU is explained; stalled and underutilization findings are not raised for it.",
	Needs:    "engine_sleep_state (≥0.11.1) or engine_pause_state where exposed",
	Cond:     "engine_sleep_state awake = 0, or engine_pause_state > 0",
	Clear:    "awake and not paused",
	Severity: "info",
	Action:   "none if intended; wake it with POST /wake_up (or resume it) before sending traffic",
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		switch {
		case resting(u.st):
			return condMet, diagnose.SevInfo
		case u.st.Sleep == diagnose.SleepUnknown && u.st.Paused == sources.TriUnknown:
			return condUnknown, 0
		}
		return condClear, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st := u.st
		var state []string
		if st.Sleep == diagnose.SleepAsleep {
			s := "asleep"
			if st.SleepLevel != "" {
				s += " (" + st.SleepLevel + ")"
			}
			state = append(state, s)
		}
		if st.Paused == sources.TriYes {
			state = append(state, "paused")
		}
		fd.Summary = plain("the engine reports itself " + strings.Join(state, " and "))
		fd.Evidence = []diagnose.Evidence{ev("state", strings.Join(state, ", "), 0), evNum("running", st.Running, diagnose.UnitCount, 0), evNum("waiting", st.Waiting, diagnose.UnitCount, 0)}
		fd.Explain = plain("vLLM's sleep mode frees the GPU (level 1 offloads the weights to CPU, level 2 discards them) and a paused engine schedules nothing: no tokens is expected, so no stalled or underutilization finding is raised.")
		fd.Action = plain("if it should serve: POST /wake_up (or resume it); otherwise nothing to do")
	},
	prom: func(g *promGen, p []float64) []promAlert {
		return []promAlert{{Severity: "info", Expr: fmt.Sprintf("min by (%s) (%s{%s=%q}) == 0 or %s > 0",
			byEndpoint, sources.FamilyName(sources.RoleLabeled, uint8(sources.LSleepState)), sources.LabelSleep, sources.SleepAwake,
			g.gauge(sources.GPaused, "max", byEndpoint))}}
	},
}

// request_errors parameters.
var (
	reParams = params{
		{"share", 0.02, "ratio", "share of finished requests that failed that counts"},
		{"critical", 0.10, "ratio", "share that makes it critical"},
		{"clear", 0.005, "ratio", "share below which it clears"},
		{"min_rate", 0.05, "per_s", "finished requests per second below which shares say nothing"},
	}
	reShare    = reParams.index("share")
	reCritical = reParams.index("critical")
	reClear    = reParams.index("clear")
	reMinRate  = reParams.index("min_rate")
)

var ruleRequestErrors = &Rule{
	ID: "request_errors", Title: "Requests failing", Scope: ScopeEndpoint,
	Catches:  "Requests the engine finished with an error (finished_reason error): bad inputs it could not serve, or an engine-side failure.",
	Needs:    "request_success by finished_reason with the error reason (≥0.14); silent before",
	Cond:     "error share ≥ {share} of ≥ {min_rate} finished requests per second",
	Clear:    "error share < {clear}",
	Severity: "warning; critical at ≥ {critical}",
	Action:   "read the server log for the failing requests' errors; a sudden rise with no change in traffic points at the engine",
	For:      time.Minute, ResolveFor: 2 * time.Minute,
	Params: reParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		share, rate := u.st.ErrorShare, u.st.ReqRate
		switch {
		case bad(share) || bad(rate):
			return condUnknown, 0
		case rate < p[reMinRate] || share < p[reClear]:
			return condClear, 0
		case share >= p[reShare]:
			x.over = share / p[reShare]
			if share >= p[reCritical] {
				return condMet, diagnose.SevCritical
			}
			return condMet, diagnose.SevWarning
		}
		return condHold, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st, w := u.st, u.st.Span
		fd.Summary = say("%s of %s finished req/s ended in an error", pct(st.ErrorShare), num(st.ReqRate))
		fd.Evidence = []diagnose.Evidence{evNum("error share", st.ErrorShare, diagnose.UnitRatio, w), evNum("finished", st.ReqRate, diagnose.UnitReqPerSec, w),
			evNum("errors", st.ErrorShare*st.ReqRate, diagnose.UnitReqPerSec, w)}
		fd.Explain = plain("vLLM counts a request as finished with reason error when the engine failed it. Clients see these as server errors; they are not aborts (the client giving up).")
		fd.Action = plain("look up the failing requests in the server log; if inputs are fine and the rate rose suddenly, the engine is failing: restart it and report the trace")
	},
	prom: func(g *promGen, p []float64) []promAlert {
		er := g.labeledRate(sources.LFinished, sources.FinishError, byEndpoint)
		all := g.labeledRate(sources.LFinished, "", byEndpoint)
		return []promAlert{
			{Severity: "warning", Expr: fmt.Sprintf("(%s) / (%s) >= %s and %s >= %s", er, all, g.num(p[reShare]), all, g.num(p[reMinRate]))},
			{Severity: "critical", Expr: fmt.Sprintf("(%s) / (%s) >= %s and %s >= %s", er, all, g.num(p[reCritical]), all, g.num(p[reMinRate]))},
		}
	},
}

// admission_rejections parameters.
var (
	arParams = params{
		{"min_rate", 0.05, "per_s", "rejections per second that count"},
		{"critical", 0.10, "ratio", "rejected share of requests offered that makes it critical"},
		{"clear", 0.01, "per_s", "rejections per second below which it clears"},
	}
	arMinRate  = arParams.index("min_rate")
	arCritical = arParams.index("critical")
	arClear    = arParams.index("clear")
)

var ruleAdmissionRejections = &Rule{
	ID: "admission_rejections", Title: "Requests rejected at admission", Scope: ScopeEndpoint,
	Catches:  "The scheduler turns requests away because an admission cap (the waiting queue's request or token limit) is full: clients get errors instead of waiting.",
	Needs:    "admission_rejections by reason (releases that expose it, ≈0.32); silent before",
	Cond:     "rejections ≥ {min_rate} per second over the window",
	Clear:    "rejections < {clear} per second",
	Severity: "warning; critical when ≥ {critical} of the requests offered are rejected",
	Action:   "name the cap that fired (its reason) and add capacity, or raise that cap if the queue may be longer",
	For:      time.Minute, ResolveFor: 2 * time.Minute,
	Params: arParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		rej, done := u.st.RejectRate, u.st.ReqRate
		switch {
		case bad(rej):
			return condUnknown, 0
		case rej < p[arClear]:
			return condClear, 0
		case rej >= p[arMinRate]:
			x.over = rej / p[arMinRate]
			if !bad(done) && rej/(rej+done) >= p[arCritical] {
				return condMet, diagnose.SevCritical
			}
			return condMet, diagnose.SevWarning
		}
		return condHold, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st, w := u.st, u.st.Span
		share := math.NaN()
		if !bad(st.ReqRate) {
			share = st.RejectRate / (st.RejectRate + st.ReqRate)
		}
		top := "unknown"
		if len(st.Rejects) > 0 {
			top = st.Rejects[0].Reason
		}
		fd.Summary = say("%s requests/s rejected at admission (%s of those offered), mostly %s", num(st.RejectRate), pct(share), top)
		fd.Evidence = []diagnose.Evidence{evNum("rejected", st.RejectRate, diagnose.UnitPerSec, w),
			evNum("rejected share", share, diagnose.UnitRatio, w), evNum("finished", st.ReqRate, diagnose.UnitReqPerSec, w), evNum("waiting", st.Waiting, diagnose.UnitCount, 0)}
		for _, r := range st.Rejects {
			fd.Evidence = append(fd.Evidence, evNum("rejected: "+r.Reason, r.PerSec, diagnose.UnitPerSec, w))
		}
		fd.Explain = say("The engine's admission control refuses new requests when a cap on the waiting queue is reached; the reason label names the cap (%s). Refused requests fail at once at the client.", top)
		fd.Action = say("the %s cap fired: add capacity (another replica) so the queue stays under it, or raise that cap if longer queues are acceptable", top)
	},
	prom: func(g *promGen, p []float64) []promAlert {
		rej := g.labeledRate(sources.LAdmissionRejected, "", byEndpoint)
		done := g.labeledRate(sources.LFinished, "", byEndpoint)
		return []promAlert{
			{Severity: "warning", Expr: fmt.Sprintf("%s >= %s", rej, g.num(p[arMinRate]))},
			{Severity: "critical", Expr: fmt.Sprintf("%s >= %s and %s / (%s + %s) >= %s", rej, g.num(p[arMinRate]), rej, rej, done, g.num(p[arCritical]))},
		}
	},
}
