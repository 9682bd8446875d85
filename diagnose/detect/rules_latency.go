package detect

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// Latency, queue and load rules.

// prefill_starvation parameters, looked up by name: a check indexes its values
// through these.
var (
	psParams = params{
		{"waiting", 5, "count", "waiting requests that count as a queue"},
		{"batch_full", 0.9, "ratio", "running / max_num_seqs that counts as a full batch"},
		{"kv_room", 0.9, "ratio", "KV usage below which KV is not the limit"},
		{"critical", 4, "factor", "TTFT p95 over target that makes it critical"},
		{"headroom", 0.15, "ratio", "share of KV blocks the recommended --max-num-seqs leaves free"},
	}
	psWaiting   = psParams.index("waiting")
	psBatchFull = psParams.index("batch_full")
	psKVRoom    = psParams.index("kv_room")
	psCritical  = psParams.index("critical")
	psHeadroom  = psParams.index("headroom")
)

var rulePrefillStarvation = &Rule{
	ID: "prefill_starvation", Title: "Prefill starvation", Scope: ScopeEndpoint,
	Catches:    "New requests wait for their first token while the running batch streams normally: long decodes hold every slot (--max-num-seqs) although the KV cache has room, or V0 without chunked prefill.",
	Needs:      "TTFT and inter-token histograms, waiting/running gauges, KV usage; max_num_seqs from the config file for the batch-full test",
	Cond:       "TTFT p95 above the SLO profile's TTFT target, inter-token p50 within its ITL target, ≥ {waiting} waiting, KV usage < {kv_room}, the binding limit is the batch cap (running flat at a plateau over the window with requests waiting throughout), and (when max_num_seqs is known) running ≥ {batch_full} of it",
	Clear:      "TTFT p95 within target, nothing waiting, or the premise gone: another limit binds (or none: a burst that drains), inter-token p50 above its target, running < {batch_full} − 20 points of max_num_seqs, or KV usage ≥ {kv_room} + 5 points",
	Severity:   "warning; critical at TTFT p95 ≥ {critical} the target",
	Action:     "raise --max-num-seqs to what the KV cache holds at the measured sequence length with {headroom} headroom (computed); V0: --enable-chunked-prefill",
	For:        2 * time.Minute,
	ResolveFor: 2 * time.Minute,
	Params:     psParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		st := u.st
		ttft, itl, wait, kv := st.TTFT.P95, st.ITL.P50, st.Waiting, st.KVUsage
		target := x.slo.TTFT.Seconds()
		switch {
		case bad(ttft) || bad(wait):
			return condUnknown, 0
		case ttft <= target || wait < 1:
			return condClear, 0
		case bad(itl) || bad(kv):
			return condHold, 0
		}
		// Raising --max-num-seqs helps only where the batch cap binds: the
		// batch sits at a plateau with requests waiting and KV room. Any
		// other limit (adapter slots, the token budget, arrivals beyond
		// what the KV cache lets the cap grow to) is another finding's.
		switch u.ep.Verdict.Limit {
		case diagnose.LimitBatchCap:
		case diagnose.LimitFewData:
			return condUnknown, 0
		default:
			return condClear, 0
		}
		slots := batchSlots(u)
		full := slots <= 0 || (!bad(st.Running) && st.Running >= p[psBatchFull]*float64(slots))
		// The premise, re-checked every time: the batch streams normally,
		// holds (nearly) every slot, and KV has room. Without it the
		// advice to raise --max-num-seqs is wrong, so the finding resolves.
		switch {
		case itl > x.slo.ITL.Seconds():
			return condClear, 0
		case slots > 0 && !bad(st.Running) && st.Running < (p[psBatchFull]-0.2)*float64(slots):
			return condClear, 0
		case kv >= p[psKVRoom]+0.05:
			return condClear, 0
		}
		if wait >= p[psWaiting] && itl <= x.slo.ITL.Seconds() && kv < p[psKVRoom] && full {
			x.over = ttft / target
			if ttft >= p[psCritical]*target {
				return condMet, diagnose.SevCritical
			}
			return condMet, diagnose.SevWarning
		}
		return condHold, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st, w := u.st, u.st.Span
		run := say("%s", num(st.Running))
		if slots := batchSlots(u); slots > 0 {
			run = run.Add(" of %d", slots)
		}
		fd.Summary = say("TTFT p95 %s (%s target %s) with inter-token p50 %s; %s waiting, running %s, KV %s",
			qsecs(&st.TTFT, st.TTFT.P95), x.slo.Name, dur(x.slo.TTFT), qsecs(&st.ITL, st.ITL.P50), num(st.Waiting), run, pct(st.KVUsage))
		fd.Evidence = []diagnose.Evidence{evQ("TTFT p95", &st.TTFT, st.TTFT.P95, w), evQ("inter-token p50", &st.ITL, st.ITL.P50, w),
			evQ("queue time p95", &st.Queue, st.Queue.P95, w), evNum("waiting", st.Waiting, diagnose.UnitCount, 0), evNum("running", st.Running, diagnose.UnitCount, 0),
			evNum("KV usage", st.KVUsage, diagnose.UnitRatio, 0)}
		fd.Explain = plain("Requests already running stream at normal speed, but new ones wait for a slot: the batch is full of long generations and a waiting prompt is only admitted when one finishes. The KV cache still has room, so the cap on running sequences, not memory, is what holds them.")
		var action []diagnose.Text
		fc, _, lever := maxNumSeqsChange(u, p[psHeadroom], false)
		switch {
		case lever:
			fd.Flags = append(fd.Flags, fc)
			if !fc.From.IsZero() {
				action = append(action, say("raise --max-num-seqs %s → %s (inter-token latency grows with the batch: watch it)", fc.From, fc.To))
			} else {
				action = append(action, say("max_num_seqs unknown: set it in the config file's targets; the KV cache holds %s sequences of the measured length", fc.To))
			}
		case fc.To.Kind == diagnose.KindStr && strings.HasPrefix(fc.To.Str, "cannot compute"):
			fd.Flags = append(fd.Flags, fc)
			action = append(action, say("--max-num-seqs: %s", fc.To))
		default:
			action = append(action, plain("--max-num-seqs already uses the KV cache; add a replica or cap generation length (clients' max_tokens)"))
		}
		if f, ok := chunkedPrefillFlag(u.ep.Version, plain("prefills wait behind full decode steps")); ok {
			fd.Flags = append(fd.Flags, f)
			action = append(action, plain("--enable-chunked-prefill"))
		}
		fd.Action = diagnose.Join(action, "; ")
	},
	prom: func(g *promGen, p []float64) []promAlert {
		base := fmt.Sprintf("%s > %s and %s <= %s and %s >= %s and %s < %s",
			g.quantile(0.95, sources.HTTFT, byEndpoint), g.num(g.slo.TTFT.Seconds()),
			g.quantile(0.5, sources.HITL, byEndpoint), g.num(g.slo.ITL.Seconds()),
			g.gauge(sources.GWaiting, "sum", byEndpoint), g.num(p[psWaiting]),
			g.gauge(sources.GKVUsage, "max", byEndpoint), g.num(p[psKVRoom]))
		return []promAlert{
			{Severity: "warning", Expr: base},
			{Severity: "critical", Expr: fmt.Sprintf("%s and %s >= %s", base, g.quantile(0.95, sources.HTTFT, byEndpoint), g.num(p[psCritical]*g.slo.TTFT.Seconds()))},
		}
	},
}

// queue_backlog parameters, looked up by name: a check indexes its values
// through these.
var (
	qbParams = params{
		{"waiting", 10, "count", "waiting requests that count as a backlog"},
		{"queue_p95", 5, "s", "queue time p95 that counts as a backlog"},
		{"growth", 0.05, "per_s", "growth of the waiting queue, requests per second"},
		{"clear", 2, "count", "waiting requests below which it clears"},
		{"critical", 30, "s", "queue time p95 that makes it critical"},
		{"headroom", 0.15, "ratio", "share of KV blocks the recommended --max-num-seqs leaves free"},
	}
	qbWaiting  = qbParams.index("waiting")
	qbQueueP95 = qbParams.index("queue_p95")
	qbGrowth   = qbParams.index("growth")
	qbClear    = qbParams.index("clear")
	qbCritical = qbParams.index("critical")
	qbHeadroom = qbParams.index("headroom")
)

var ruleQueueBacklog = &Rule{
	ID: "queue_backlog", Title: "Queue backlog", Scope: ScopeEndpoint,
	Catches:  "More requests arrive than the engine completes: the waiting queue and the time spent in it grow.",
	Needs:    "waiting gauge; queue-time histogram (≥0.6.4) or the waiting trend",
	Cond:     "≥ {waiting} waiting and (queue time p95 ≥ {queue_p95} or the queue growing ≥ {growth} over the window)",
	Clear:    "fewer than {clear} waiting, or the queue emptied within the window and is not growing (a burst that drains)",
	Severity: "warning; critical at queue time p95 ≥ {critical}",
	Action:   "more capacity: the replicas that match arrivals (computed from completions and queue growth); --max-num-seqs up to what the KV cache holds when the batch cap binds and KV has room (computed), as the smaller part when arrivals exceed what it absorbs",
	For:      2 * time.Minute, ResolveFor: 2 * time.Minute,
	Params: qbParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		st := u.st
		wait, q := st.Waiting, st.Queue.P95
		if bad(wait) {
			return condUnknown, 0
		}
		if wait < p[qbClear] {
			return condClear, 0
		}
		if wait < p[qbWaiting] {
			return condHold, 0
		}
		if u.ep.Verdict.Limit == diagnose.LimitBurst {
			return condClear, 0 // the queue drains: not a backlog
		}
		slow := !bad(q) && q >= p[qbQueueP95]
		growing := !bad(u.ep.Trend.WaitSlope) && u.ep.Trend.Span >= x.f.Window/2 && u.ep.Trend.WaitSlope >= p[qbGrowth]
		x.over = max(wait/p[qbWaiting], q/p[qbQueueP95])
		switch {
		case slow && q >= p[qbCritical]:
			return condMet, diagnose.SevCritical
		case slow || growing:
			return condMet, diagnose.SevWarning
		case bad(q) && bad(u.ep.Trend.WaitSlope):
			return condUnknown, 0
		}
		return condHold, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st, w := u.st, u.st.Span
		fd.Summary = say("%s waiting, queue time p95 %s, queue %s", num(st.Waiting), qsecs(&st.Queue, st.Queue.P95), growthWords(u.ep.Trend.WaitSlope))
		fd.Evidence = []diagnose.Evidence{evNum("waiting", st.Waiting, diagnose.UnitCount, 0), evQ("queue time p95", &st.Queue, st.Queue.P95, w),
			evNum("queue growth", u.ep.Trend.WaitSlope, diagnose.UnitReqPerSec, u.ep.Trend.Span), evNum("completed", st.ReqRate, diagnose.UnitReqPerSec, w),
			evNum("running", st.Running, diagnose.UnitCount, 0), evNum("KV usage", st.KVUsage, diagnose.UnitRatio, 0), evQ("TTFT p95", &st.TTFT, st.TTFT.P95, w)}
		fd.Explain = plain("Requests arrive faster than this engine finishes them, so they queue; every queued second adds to TTFT. The queue only shrinks when arrivals drop or capacity grows.")
		var action []diagnose.Text
		switch v := &u.ep.Verdict; {
		case v.Limit == diagnose.LimitArrivals && v.GaveUp > 0:
			action = append(action, say("arrivals exceed capacity and clients give up in the queue: %s of the %s req/s it finishes were aborted, after queueing p95 %s; serving the oldest first, the engine spends its steps on requests whose clients are about to leave, so adding a little capacity serves almost none. Shed load before the queue wait reaches the clients' timeout (a queue cap or a wait deadline at the gateway or router, client retries with backoff), then size replicas from what it serves once it serves again",
				pct(v.GaveUp), num(st.ReqRate), qsecs(&st.Queue, st.Queue.P95)))
		case v.Limit == diagnose.LimitArrivals:
			action = append(action, arrivalsWords(x, u, v))
		case v.Limit == diagnose.LimitRouting:
			action = append(action, routingWords(x, u, v))
		case !capacityBinds(v.Limit) || v.Throttled:
			// Sizing replicas by running ÷ in flight assumes the batch is
			// the capacity; with LoRA slots, drafts or an unknown limit
			// holding the queue it is not (a LoRA-bound replica running 4
			// with 28 waiting read as "48 replicas instead of 6").
			action = append(action, plain("not sized in replicas: capacity does not bind here (see the bottleneck verdict for what holds the queue)"))
		default:
			if why, ok := replicasNeeded(x, u, p[qbQueueP95]); ok {
				action = append(action, why)
			}
		}
		fc, n, lever := maxNumSeqsChange(u, p[qbHeadroom], false)
		v := &u.ep.Verdict
		switch {
		case v.Limit != diagnose.LimitBatchCap && !(v.Limit == diagnose.LimitArrivals && v.Under == diagnose.LimitBatchCap):
			// The batch cap does not bind: its flag would not admit one
			// more request.
		case lever && !bad(st.KVUsage) && st.KVUsage < 0.9:
			fd.Flags = append(fd.Flags, fc)
			if cur, ok := asInt(fc.From); ok && cur > 0 {
				// The gain of the value shown: a held value stays put
				// while n moves within the hold's margin.
				if to, ok := asInt(x.held(u.ep.Name, fc).To); ok {
					n = to
				}
				gain := float64(n)/float64(cur) - 1
				if v.Limit == diagnose.LimitArrivals {
					action = append(action, say("the smaller part: raise --max-num-seqs %s → %s (+%s of capacity, what the KV cache allows)", fc.From, fc.To, pct(gain)))
				} else {
					action = append(action, say("the KV cache has room: raise --max-num-seqs %s → %s (+%s)", fc.From, fc.To, pct(gain)))
				}
			} else {
				action = append(action, say("the KV cache holds %s sequences of the measured length (set max_num_seqs in the config file's targets to compare)", fc.To))
			}
		}
		if len(action) == 0 {
			action = append(action, say("add replicas or shed load: this engine completes %s req/s", num(st.ReqRate)))
		}
		fd.Action = diagnose.Join(action, "; ")
	},
	prom: func(g *promGen, p []float64) []promAlert {
		wait := g.gauge(sources.GWaiting, "sum", byEndpoint)
		q := g.quantile(0.95, sources.HQueue, byEndpoint)
		return []promAlert{
			{Severity: "warning", Expr: fmt.Sprintf("%s >= %s and (%s >= %s or deriv((%s)[%s:]) >= %s)",
				wait, g.num(p[qbWaiting]), q, g.num(p[qbQueueP95]), wait, g.w, g.num(p[qbGrowth]))},
			{Severity: "critical", Expr: fmt.Sprintf("%s >= %s and %s >= %s", wait, g.num(p[qbWaiting]), q, g.num(p[qbCritical]))},
		}
	},
}

func growthWords(slope float64) diagnose.Text {
	switch {
	case bad(slope):
		return plain("trend unknown")
	case slope > 0:
		return say("growing %s/s", num(slope))
	case slope < 0:
		return say("shrinking %s/s", num(-slope))
	}
	return plain("flat")
}

// capacityBinds says whether the verdict's limit is one more replicas
// relieve in proportion to the batch they run: the batch cap, the KV
// cache, the token budget, the GPU's compute.
func capacityBinds(l diagnose.Limit) bool {
	switch l {
	case diagnose.LimitBatchCap, diagnose.LimitKVCache, diagnose.LimitTokenBudget, diagnose.LimitCompute:
		return true
	}
	return false
}

// capacityNeed sizes capacity from the queue itself, as a multiple of
// today's, with the replicas of the model serving now. Little's law gives
// the time a request spends queued (waiting ÷ completion rate); serving
// every request in flight at once takes (running + waiting) ÷ running of
// today's capacity, and a queue still growing adds arrivals over
// completions. Under closed-loop load arrivals equal completions, so the
// in-flight ratio is what sizes it.
func capacityNeed(x *evalCtx, u *unit) (need float64, reps int, ok bool) {
	st := u.st
	finished, run, wait := st.ReqRate, st.Running, st.Waiting
	if bad(finished) || finished <= 0 || bad(run) || run < 1 || bad(wait) || wait <= 0 {
		return 0, 0, false
	}
	done := served(st)
	if done <= 0 {
		return 0, 0, false
	}
	need = (run + wait) / run
	if g := u.ep.Trend.WaitSlope; !bad(g) && g > 0 {
		need = max(need, (finished+g)/done)
	}
	return need, modelReplicas(x, u.model), true
}

// served is the completion rate without aborts: aborted requests finished
// without being served.
func served(st *diagnose.Stats) float64 {
	if !bad(st.AbortShare) {
		return st.ReqRate * (1 - st.AbortShare)
	}
	return st.ReqRate
}

// arrivalsWords says "arrivals exceed capacity" with its arithmetic: the
// arrival rate over what the replica serves (Little's law: the concurrency
// the arrivals need is that multiple of today's), divided by what raising
// the binding limit adds; with its peers read, the pool's arrivals at this
// replica's rate.
func arrivalsWords(x *evalCtx, u *unit, v *diagnose.Verdict) diagnose.Text {
	st, tr := u.st, &u.ep.Trend
	done := served(st)
	need := (st.ReqRate + tr.WaitSlope) / done
	servedWords := say("%s req/s served", num(done))
	if !bad(st.AbortShare) && st.AbortShare > 0 {
		servedWords = servedWords.Add(" (the finished less the %s aborted)", pct(st.AbortShare))
	}
	s := say("arrivals exceed capacity: (%s req/s finished + the queue growing %s/s) ÷ %s = %s× what this replica serves",
		num(st.ReqRate), num(tr.WaitSlope), servedWords, dec(need, 2))
	if v.Gain > 0 {
		s = s.Add(", ÷ %s for the binding limit raised as far as the evidence allows", dec(1+v.Gain, 2))
	}
	pl := poolFill(x, u.ep, u.model, st.ReqRate+tr.WaitSlope, v.Served)
	switch {
	case v.Now > 1 && pl.peers > 0:
		// Sized from the pool's own arrivals: its peers read, not
		// assumed as loaded as this one.
		s = s.Add(": its %d peers receive %s req/s on average; the pool's %s req/s at this replica's rate fill %s replicas: about %d replicas of this model instead of %d (Little's law: the concurrency the arrivals need, at today's time per request)",
			pl.peers, num(pl.peerRate), num(pl.arrivals), dec(pl.fill*float64(v.Now), 2), v.Replicas, v.Now)
	case v.Now > 1:
		// Sized from this replica's load: the pool's count scales with it
		// only if its other replicas carry as much.
		s = s.Add(": about %d replicas of this model instead of %d if the others are as loaded (Little's law: the concurrency the arrivals need, at today's time per request)", v.Replicas, v.Now)
	default:
		s = s.Add(": about %d replicas of this model instead of %d (Little's law: the concurrency the arrivals need, at today's time per request)", v.Replicas, v.Now)
	}
	if today := float64(v.Now) * pl.fill; v.Replicas != replicaCount(v.Now, today) {
		// Held where it was shown (arrivals): the arithmetic above is
		// today's, the count the one it gave when shown.
		s = s.Add("; shown as %d until the need moves by more than %s from the %s replicas it was computed at (now %s)",
			v.Replicas, pct(flagMargin), dec(v.ReplicasAt, 2), dec(today, 2))
	}
	return s
}

// replicasNeeded words capacityNeed: the Little's-law arithmetic and the
// replicas it comes to.
func replicasNeeded(x *evalCtx, u *unit, target float64) (diagnose.Text, bool) {
	ratio, reps, ok := capacityNeed(x, u)
	if !ok {
		return diagnose.Text{}, false
	}
	st := u.st
	finished, run, wait, done := st.ReqRate, st.Running, st.Waiting, served(st)
	inflight := (run + wait) / run
	s := say("Little's law: %s waiting ÷ %s req/s served = %s queued (target %s); serving all %s in flight at once takes (%s running + %s waiting) ÷ %s = %s× today's capacity",
		num(wait), num(done), secs(wait/done), secs(target), num(run+wait), num(run), num(wait), num(run), dec(inflight, 2))
	if g := u.ep.Trend.WaitSlope; !bad(g) && g > 0 && ratio > inflight {
		s = s.Add("; the queue still grows %s/s: arrivals (%s + %s) ÷ %s served = %s×", num(g), num(finished), num(g), num(done), dec(ratio, 2))
	}
	need := int(math.Ceil(float64(reps)*ratio - 1e-9))
	switch {
	case need <= reps:
		return s.Add("; capacity is enough once the queue drains"), true
	case reps == 1:
		return s.Add(", so %d replicas of this model instead of 1", need), true
	}
	return s.Add(" on this replica: about %d replicas of this model instead of %d if the others are as loaded", need, reps), true
}

// decode_stutter parameters, looked up by name: a check indexes its values
// through these.
var (
	dsParams = params{
		{"p99_factor", 2, "factor", "inter-token p99 over target that counts as stutter"},
		{"min_tokens", 200, "count", "tokens in the window below which percentiles say nothing"},
	}
	dsP99Factor = dsParams.index("p99_factor")
	dsMinTokens = dsParams.index("min_tokens")
)

// drainedBurst reports a window whose queue formed and emptied, none of it
// waiting longer than a burst lasts: a burst the engine drained.
func drainedBurst(tr *diagnose.Trend) bool {
	return tr.Points >= minPoints && !bad(tr.WaitMin) && tr.WaitMin < 1 && tr.WaitMax >= 1 && tr.WaitFor < burstFor
}

var ruleDecodeStutter = &Rule{
	ID: "decode_stutter", Title: "Decode stutter", Scope: ScopeEndpoint,
	Catches:  "Streaming stalls now and then: the slowest inter-token gaps far above target while the median is fine (long prefill chunks interleaved with decodes, very large steps).",
	Needs:    "inter-token histogram (inter_token_latency_seconds ≥0.10.2, time_per_output_token_seconds before); iteration_tokens_total (≥0.6.4) for the computed budget",
	Cond:     "inter-token p99 > {p99_factor} the SLO profile's ITL target while p50 is within it, over ≥ {min_tokens} tokens, and not a burst the engine drained within the window (its queued prompts fill steps with prefill until it empties); shown pending only once it has held 10 s (a burst's stalls show a scrape before its queue)",
	Clear:    "inter-token p99 ≤ 0.75 × {p99_factor} the target, or p50 above the target (not stutter: the median itself is slow)",
	Severity: "warning",
	Action:   "lower --max-num-batched-tokens to the step size whose latency meets the target (computed from the tokens-per-step and inter-token percentiles); V0: --enable-chunked-prefill",
	For:      3 * time.Minute, ResolveFor: 2 * time.Minute,
	// A burst's stalls show in the inter-token histogram at once, its
	// queue only at the next scrape that catches it: a stutter shorter
	// than a burst lasts is not shown pending.
	QuietFor: burstFor,
	Params:   dsParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		q := &u.st.ITL
		target := x.slo.ITL.Seconds()
		switch {
		case bad(q.P99) || bad(q.P50) || q.Count < p[dsMinTokens]:
			return condUnknown, 0
		case q.P50 > target:
			// Stutter means slow outliers around a healthy median; a slow
			// median is another problem, so the claim no longer holds.
			return condClear, 0
		case q.P99 > p[dsP99Factor]*target && q.P50 <= target && u.ep.Trend.Points < minPoints:
			// Too few points to tell a burst that drains from a stutter
			// that stays (opening on a burst, its first seconds are all
			// burst).
			return condUnknown, 0
		case q.P99 > p[dsP99Factor]*target && q.P50 <= target && drainedBurst(&u.ep.Trend):
			// The slow steps are a burst's: its prompts, admitted together
			// while they queued, filled steps with prefill chunks up to the
			// budget, and the queue emptied within the window. That ends
			// with the burst; a smaller budget would only drain it slower.
			return condHold, 0
		case q.P99 > p[dsP99Factor]*target && q.P50 <= target:
			return condMet, diagnose.SevWarning
		case q.P99 <= 0.75*p[dsP99Factor]*target:
			return condClear, 0
		}
		return condHold, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st, w := u.st, u.st.Span
		target := x.slo.ITL.Seconds()
		fd.Summary = say("inter-token p99 %s, p50 %s (%s target %s)", qsecs(&st.ITL, st.ITL.P99), qsecs(&st.ITL, st.ITL.P50), x.slo.Name, dur(x.slo.ITL))
		fd.Evidence = []diagnose.Evidence{evQ("inter-token p99", &st.ITL, st.ITL.P99, w), evQ("inter-token p50", &st.ITL, st.ITL.P50, w),
			evNum("tokens per step p50 (by token)", st.IterTokensByToken.P50, diagnose.UnitCount, w), evNum("tokens per step p99 (by token)", st.IterTokensByToken.P99, diagnose.UnitCount, w),
			evNum("running", st.Running, diagnose.UnitCount, 0)}
		fd.Explain = plain("Most tokens arrive on time, but some steps take far longer: a step that also carries a big prefill chunk (or a very large batch) delays every running stream by its full duration. --max-num-batched-tokens caps the tokens one step may carry.")
		fc := diagnose.FlagChange{Flag: "--max-num-batched-tokens"}
		// Both distributions weighted by token, so p50 and p99 of each
		// describe the same steps.
		b, miss := FitBatchedTokens(st.ITL.P50, st.ITL.P99, st.IterTokensByToken.P50, st.IterTokensByToken.P99, target)
		switch {
		case capped(&st.ITL, st.ITL.P99):
			miss = say("inter-token p99 is beyond the last bucket (%s): how step time grows with step size is unknown", qsecs(&st.ITL, st.ITL.P99))
		case capped(&st.IterTokensByToken, st.IterTokensByToken.P99):
			miss = plain("tokens per step p99 is beyond the last bucket of " + histName(sources.HIterTokens) + ": how step time grows with step size is unknown")
		}
		if !miss.IsZero() {
			fc.To = words(say("cannot compute: %s", miss))
			fd.Action = say("--max-num-batched-tokens: %s", miss)
		} else {
			fc.To, fc.Exact = intv(b.Tokens), b.Exact
			fc.Why = b.Why().Cat(plain("; the current value is not exposed by vLLM"))
			fd.Action = say("set --max-num-batched-tokens to %d (smaller prefill chunks; TTFT of long prompts grows)", b.Tokens)
		}
		fd.Flags = []diagnose.FlagChange{fc}
		if f, ok := chunkedPrefillFlag(u.ep.Version, plain("the budget only splits prefills with chunked prefill")); ok {
			fd.Flags = append(fd.Flags, f)
			fd.Action = fd.Action.Cat(plain("; --enable-chunked-prefill"))
		}
	},
	prom: func(g *promGen, p []float64) []promAlert {
		return []promAlert{{Severity: "warning", Expr: fmt.Sprintf("%s > %s and %s <= %s",
			g.quantile(0.99, sources.HITL, byEndpoint), g.num(p[dsP99Factor]*g.slo.ITL.Seconds()),
			g.quantile(0.5, sources.HITL, byEndpoint), g.num(g.slo.ITL.Seconds()))}}
	},
}

// high_abort_rate parameters, looked up by name: a check indexes its values
// through these.
var (
	abParams = params{
		{"share", 0.10, "ratio", "abort share that counts"},
		{"critical", 0.25, "ratio", "abort share that makes it critical"},
		{"clear", 0.05, "ratio", "abort share below which it clears"},
		{"min_rate", 0.05, "per_s", "finished requests per second below which shares say nothing"},
	}
	abShare    = abParams.index("share")
	abCritical = abParams.index("critical")
	abClear    = abParams.index("clear")
	abMinRate  = abParams.index("min_rate")
)

var ruleAbortRate = &Rule{
	ID: "high_abort_rate", Title: "High abort rate", Scope: ScopeEndpoint,
	Catches:  "Clients give up on requests (timeouts, users stopping streams, retries): aborted requests are a large share of finished ones.",
	Needs:    "request_success by finished_reason (V0 ≥0.4.2, V1 ≥0.7.2)",
	Cond:     "abort share ≥ {share} of ≥ {min_rate} finished requests over the window",
	Clear:    "abort share < {clear}",
	Severity: "warning; critical at ≥ {critical}",
	Action:   "compare client timeouts with E2E p99; fix the latency finding behind it, or raise the timeout",
	For:      2 * time.Minute, ResolveFor: 2 * time.Minute,
	Params: abParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		share, rate := u.st.AbortShare, u.st.ReqRate
		switch {
		case bad(share) || bad(rate):
			return condUnknown, 0
		case rate < p[abMinRate] || share < p[abClear]:
			return condClear, 0
		case share >= p[abCritical]:
			x.over = share / p[abShare]
			return condMet, diagnose.SevCritical
		case share >= p[abShare]:
			x.over = share / p[abShare]
			return condMet, diagnose.SevWarning
		}
		return condHold, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st, w := u.st, u.st.Span
		fd.Summary = say("%s of %s finished req/s aborted; E2E p95 %s", pct(st.AbortShare), num(st.ReqRate), qsecs(&st.E2E, st.E2E.P95))
		fd.Evidence = []diagnose.Evidence{evNum("abort share", st.AbortShare, diagnose.UnitRatio, w), evNum("finished", st.ReqRate, diagnose.UnitReqPerSec, w),
			evQ("E2E p95", &st.E2E, st.E2E.P95, w), evQ("E2E p99", &st.E2E, st.E2E.P99, w), evQ("TTFT p95", &st.TTFT, st.TTFT.P95, w)}
		fd.Explain = plain("vLLM counts a request as aborted when the client disconnects before it finishes: a timeout, a user pressing stop, a gateway giving up. Aborted work is wasted GPU time, and clients that retry add load exactly when the engine is slow.")
		if v := &u.ep.Verdict; v.GaveUp > 0 {
			// Longer timeouts only lengthen a queue arrivals outgrow.
			fd.Action = say("clients give up waiting in the queue (queue time p95 %s): longer timeouts only lengthen a queue that arrivals outgrow; shed load before the wait reaches the timeout and back off retries (see the queue backlog)", qsecs(&st.Queue, st.Queue.P95))
			return
		}
		fd.Action = say("requests take up to %s (E2E p99): make client and gateway timeouts longer than that, or cut latency first (see the other findings); check retries do not pile on", qsecs(&st.E2E, st.E2E.P99))
	},
	prom: func(g *promGen, p []float64) []promAlert {
		ab := g.labeledRate(sources.LFinished, sources.FinishAbort, byEndpoint)
		all := g.labeledRate(sources.LFinished, "", byEndpoint)
		base := fmt.Sprintf("(%s) / (%s)", ab, all)
		return []promAlert{
			{Severity: "warning", Expr: fmt.Sprintf("%s >= %s and %s >= %s", base, g.num(p[abShare]), all, g.num(p[abMinRate]))},
			{Severity: "critical", Expr: fmt.Sprintf("%s >= %s and %s >= %s", base, g.num(p[abCritical]), all, g.num(p[abMinRate]))},
		}
	},
}

// slo_breach parameters, looked up by name: a check indexes its values
// through these.
var (
	sbParams = params{
		{"min_requests", 20, "count", "observations in the window below which percentiles say nothing"},
		{"critical", 2, "factor", "p95 over target that makes it critical"},
	}
	sbMinReq   = sbParams.index("min_requests")
	sbCritical = sbParams.index("critical")
)

var ruleSLOBreach = &Rule{
	ID: "slo_breach", Title: "SLO breach", Scope: ScopeEndpoint,
	Catches:    "User-facing latency above the selected SLO profile (--slo, or slo_profiles in the config file): TTFT, inter-token or end-to-end.",
	Needs:      "TTFT, inter-token and E2E histograms",
	Cond:       "any of TTFT / inter-token / E2E: p95 above the profile's target, or p99 above twice it, over ≥ {min_requests} observations",
	Clear:      "every percentile within target",
	Severity:   "warning; critical when a p95 is ≥ {critical} its target; info during a transient burst that drains (the queue emptied within the window), and when only E2E is over while TTFT and inter-token latency are within target (long answers: the length asked for, not the engine)",
	Action:     "follow the more specific finding if there is one (it is shown instead); otherwise add capacity",
	For:        5 * time.Minute,
	ResolveFor: 2 * time.Minute,
	Params:     sbParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		known, breach, crit := false, false, false
		for _, l := range sloLegs(x.slo, u.st) {
			if bad(l.q.P95) || l.q.Count < p[sbMinReq] {
				continue
			}
			known = true
			t := l.target.Seconds()
			if l.q.P95 > t || (!bad(l.q.P99) && l.q.P99 > 2*t) {
				breach = true
			}
			if l.q.P95 >= p[sbCritical]*t {
				crit = true
			}
		}
		switch {
		case !known || u.ep.Verdict.Limit == diagnose.LimitFewData || u.ep.Trend.Points < minPoints:
			// A second or two of histograms is one or two steps: a prefill
			// that stalled every stream once read as inter-token p95
			// 51-245 ms on busy, healthy and long-answer replicas just
			// opened ("add capacity"), gone a scrape later. Judged from
			// the verdict's points on (a Prometheus backfill has them at
			// once).
			return condUnknown, 0
		case breach && u.ep.Verdict.Limit == diagnose.LimitBurst:
			return condMet, diagnose.SevInfo // a transient burst: said so, never an alarm
		case breach && longAnswers(x.slo, u.st, p[sbMinReq]):
			return condMet, diagnose.SevInfo // the answers' length, not the engine: said, never an alarm
		case crit:
			return condMet, diagnose.SevCritical
		case breach:
			return condMet, diagnose.SevWarning
		}
		return condClear, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		w := u.st.Span
		var parts []diagnose.Text
		legs := sloLegs(x.slo, u.st)
		// Three values a leg, in one allocation (evaluated every second on
		// every endpoint over its targets).
		n := 0
		for _, l := range legs {
			if !bad(l.q.P95) {
				n++
			}
		}
		if n > 0 {
			fd.Evidence = make([]diagnose.Evidence, 0, 3*n)
			parts = make([]diagnose.Text, 0, n)
		}
		for _, l := range legs {
			if bad(l.q.P95) {
				continue
			}
			fd.Evidence = append(fd.Evidence, evQ(l.name+" p95", l.q, l.q.P95, w), evNum(l.name+" target", l.target.Seconds(), diagnose.UnitSeconds, 0),
				evQ(l.name+" p99", l.q, l.q.P99, w))
			t := l.target.Seconds()
			switch {
			case l.q.P95 > t:
				parts = append(parts, say("%s p95 %s > %s", l.name, qsecs(l.q, l.q.P95), dur(l.target)))
			case !bad(l.q.P99) && l.q.P99 > 2*t:
				// The tail alone breaches: its words say the p99 and twice
				// the target it is held to ("p95 ≤10ms > 50ms" read as a
				// contradiction when only the p99 was over).
				parts = append(parts, say("%s p99 %s > %s", l.name, qsecs(l.q, l.q.P99), dur(2*l.target)))
			}
		}
		fd.Summary = diagnose.Join(parts, ", ").Add(" (%s profile)", x.slo.Name)
		// A burst explains the queue's latency, not a slow pace: with the
		// inter-token p95 over target the steps are slow (below).
		if u.ep.Verdict.Limit == diagnose.LimitBurst && !u.ep.Verdict.PaceOver {
			fd.Summary = fd.Summary.Cat(plain(" during a transient burst the engine drained"))
			fd.Explain = plain("Latency rose while a burst of requests queued; the queue emptied within the window and is not growing, so no limit of the engine binds. Nothing to change unless bursts grow.")
			fd.Action = plain("none: a burst that drains; watch the queue if bursts grow")
			return
		}
		if longAnswers(x.slo, u.st, p[sbMinReq]) {
			st := u.st
			// No product of the two: a mean length times the median gap
			// is not the p95 beside it, and the reader would check one
			// against the other.
			fd.Summary = fd.Summary.Cat(say(" with TTFT p95 %s and inter-token p95 %s within target: long answers",
				qsecs(&st.TTFT, st.TTFT.P95), qsecs(&st.ITL, st.ITL.P95)))
			if !bad(st.AvgGenLen) {
				// SGLang exposes no output-length histogram: the length
				// is said where it is known.
				fd.Summary = fd.Summary.Cat(say(" (%s tokens on average)", grouped(st.AvgGenLen)))
			}
			fd.Explain = plain("Each request waits little for its first token and gets its tokens at the target pace; it takes long because it asks for many tokens. The engine is not slow: more replicas would not shorten an answer.")
			fd.Action = plain("not capacity (adding replicas will not shorten it): the answers are long; cap max_tokens where clients allow it, stream the answer, or hold this traffic to an SLO profile whose E2E target fits its length")
			return
		}
		if itlTailOnly(x.slo, u.st, p[sbMinReq]) {
			// Only the slowest gaps: the median and p95 stream at pace.
			st := u.st
			fd.Summary = fd.Summary.Cat(say("; the slowest gaps only (inter-token p50 %s, p95 %s within target)", qsecs(&st.ITL, st.ITL.P50), qsecs(&st.ITL, st.ITL.P95)))
			fd.Explain = plain("Most tokens stream at the target pace; now and then a step that carries prefill work (a new prompt, or a chunk of one) stalls every running stream for its length. That is the step size, not a lack of capacity.")
			// V0 prefills whole prompts unless told to chunk them; V1
			// and SGLang chunk by default (an SGLang replica read "V0:
			// (no SGLang flag: …)").
			smaller := "a lower --max-num-batched-tokens"
			if u.ep.Version.Gen == sources.GenV0 {
				smaller = "--enable-chunked-prefill, or a lower --max-num-batched-tokens with it"
			}
			fd.Action = say("not capacity: the steps that carry prefill stall the streams; if the stalls matter to users, smaller prefill steps (%s) trade them for a longer TTFT of long prompts", smaller)
			return
		}
		if u.ep.Verdict.Limit == diagnose.LimitUnexplained && slices.Contains(u.ep.Verdict.Ruled, diagnose.LimitCompute) && steadyWait(x, u.ep) {
			// Held in the queue with room everywhere, the GPU measured
			// not busy: not capacity.
			fd.Summary = fd.Summary.Cat(say(", requests waiting %s (queue p95) at nearly every point with room in batch and KV cache", qsecs(&u.st.Queue, u.st.Queue.P95)))
			fd.Explain = plain("Requests wait in the queue a long time at nearly every point, though the queue empties and batch, KV cache and token budget have room: vLLM's scheduler would admit them at the next step, so something outside this engine's capacity holds them. More replicas would not shorten it.")
			fd.Action = plain("not this engine's capacity (adding replicas will not help): find what holds admitted requests: on a P/D decode instance the KV reads from the prefill side (vLLM from 0.11.1 counts failed NIXL transfers; check the UCX/NIXL logs), a LoRA adapter loading, or a scheduler stall")
			return
		}
		if v := &u.ep.Verdict; v.PaceOver {
			// Nothing waits, yet tokens stream slower than target: each
			// step is slow. A GPU below its clocks (heat, a power brake)
			// or shared with other work slows every step; at its clocks,
			// the batch it runs sets the pace. Six replicas on one host's
			// GPUs, none attributed, read "add capacity" beside a GPU
			// the node's findings showed throttled.
			fd.Explain = plain("Nothing waits, yet tokens stream slower than the target pace: each step of the engine takes long. A GPU running below its clocks (heat, a power brake) or shared with other work slows every step; a GPU at its clocks is slowed by the size of the batch it runs, since each decode step reads every running sequence's KV cache.")
			gpu := plain("its GPU shows no slowdown over the window")
			switch {
			case len(u.ep.GPU.GPUs) == 0:
				gpu = plain("no GPU is attributed to this endpoint: check the one it runs on for throttling or sharing (the node's GPU findings, nvidia-smi -q -d PERFORMANCE on its host)")
			case len(neighbors(x, u.ep)) > 0:
				gpu = say("another process on its GPU, %s: its kernels take the engine's time; move it off the serving GPU", neighborWords(neighbors(x, u.ep)))
			case slowedShare(x, u.ep) > 0:
				gpu = say("its GPU was slowed by heat or hardware at %s of the window's readings: check its clocks and throttle reasons (nvidia-smi -q -d PERFORMANCE)", pct(slowedShare(x, u.ep)))
			}
			fd.Action = plain("the steps are slow, not the queue: ").Cat(gpu).Cat(say("; at full clocks the batch sets the pace (%s running): a lower --max-num-seqs trades throughput for pace", num(u.st.Running)))
			return
		}
		fd.Explain = say("Latency users feel is above the %s profile's targets (%s). No more specific rule explains it right now.", x.slo.Name, x.slo.Desc)
		fd.Action = plain("check running vs waiting and KV usage for the cause; add capacity if the engine is simply saturated")
	},
	prom: func(g *promGen, p []float64) []promAlert {
		// E2E alone over, with TTFT and inter-token latency within target,
		// is long answers: info, as the detector says it; with either of
		// them over it counts as theirs does.
		var legs, crit [3][]string
		for i, l := range []struct {
			h sources.Hist
			t time.Duration
		}{{sources.HTTFT, g.slo.TTFT}, {sources.HITL, g.slo.ITL}, {sources.HE2E, g.slo.E2E}} {
			legs[i] = []string{fmt.Sprintf("%s > %s", g.quantile(0.95, l.h, byEndpoint), g.num(l.t.Seconds())),
				fmt.Sprintf("%s > %s", g.quantile(0.99, l.h, byEndpoint), g.num(2*l.t.Seconds()))}
			crit[i] = []string{fmt.Sprintf("%s >= %s", g.quantile(0.95, l.h, byEndpoint), g.num(p[sbCritical]*l.t.Seconds()))}
		}
		steps := strings.Join(append(slices.Clone(legs[0]), legs[1]...), " or ")
		return []promAlert{
			{Severity: "info", Expr: strings.Join(legs[2], " or ")},
			{Severity: "warning", Expr: steps},
			{Severity: "critical", Expr: strings.Join(append(slices.Clone(crit[0]), crit[1]...), " or ") + " or ((" + crit[2][0] + ") and (" + steps + "))"},
		}
	},
}

type sloLeg struct {
	name   string
	q      *diagnose.Quantiles
	target time.Duration
}

// longAnswers: E2E is over its target while TTFT and inter-token latency
// are within theirs (p95, and p99 within twice): every request gets its
// first token and then its tokens at the target pace, and is long because
// it asks for many tokens. Inter-token latency is held to enough
// observations; TTFT only to being known: long answers finish many
// requests whose first token came before the window (an E2E count of 22
// beside a TTFT count of 10 at opening), and an E2E breach said critical
// until TTFT had its twenty would stay critical through the hysteresis.
func longAnswers(s *diagnose.SLO, st *diagnose.Stats, minReq float64) bool {
	legs := sloLegs(s, st)
	for i, l := range legs[:2] {
		need := minReq
		if i == 0 {
			need = 1
		}
		if bad(l.q.P95) || l.q.Count < need || l.q.P95 > l.target.Seconds() || !bad(l.q.P99) && l.q.P99 > 2*l.target.Seconds() {
			return false
		}
	}
	e := legs[2]
	return !bad(e.q.P95) && e.q.Count >= minReq &&
		(e.q.P95 > e.target.Seconds() || !bad(e.q.P99) && e.q.P99 > 2*e.target.Seconds())
}

// itlTailOnly: the only breach is the inter-token p99 over twice its
// target, every other leg (and the inter-token p50 and p95) within.
func itlTailOnly(s *diagnose.SLO, st *diagnose.Stats, minReq float64) bool {
	legs := sloLegs(s, st)
	itl := legs[1]
	if bad(itl.q.P99) || bad(itl.q.P50) || itl.q.Count < minReq || itl.q.P99 <= 2*itl.target.Seconds() ||
		itl.q.P95 > itl.target.Seconds() || itl.q.P50 > itl.target.Seconds() {
		return false
	}
	for _, l := range []sloLeg{legs[0], legs[2]} {
		// As the summary lists them: any leg known and over, however few
		// its observations.
		if !bad(l.q.P95) && (l.q.P95 > l.target.Seconds() || !bad(l.q.P99) && l.q.P99 > 2*l.target.Seconds()) {
			return false
		}
	}
	return true
}

func sloLegs(s *diagnose.SLO, st *diagnose.Stats) [3]sloLeg {
	return [3]sloLeg{{"TTFT", &st.TTFT, s.TTFT}, {"inter-token", &st.ITL, s.ITL}, {"E2E", &st.E2E, s.E2E}}
}

// gpu_underutilization parameters, looked up by name: a check indexes its values
// through these.
var (
	guParams = params{
		{"batch", 2, "count", "mean running requests at or below which batches are small"},
		{"waiting", 1, "count", "mean waiting requests at or below which nothing queues"},
		{"kv", 0.5, "ratio", "KV usage below which the cache has room"},
		{"gpu_util", 50, "count", "GPU utilization (percent) below which the GPU is idle"},
	}
	guBatch   = guParams.index("batch")
	guWaiting = guParams.index("waiting")
	guKV      = guParams.index("kv")
	guGPUUtil = guParams.index("gpu_util")
)

var ruleUnderutil = &Rule{
	ID: "gpu_underutilization", Title: "GPU underutilization", Scope: ScopeEndpoint,
	Catches:  "Small batches and an idle GPU while there is capacity: traffic too thin for this replica (or a router starving it).",
	Needs:    "running/waiting gauges, KV usage; GPU utilization when vtop runs on the node",
	Cond:     "mean running ≤ {batch} over the window, mean waiting ≤ {waiting}, KV usage < {kv}, and GPU utilization < {gpu_util} % when known",
	Clear:    "mean running > 2 × {batch}, or requests waiting",
	Severity: "info: a capacity note (nothing waits)",
	Action:   "fold this model onto fewer replicas or smaller GPUs (lower --tensor-parallel-size), or route more traffic here",
	For:      5 * time.Minute, ResolveFor: 2 * time.Minute,
	Params: guParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		if resting(u.st) {
			return condClear, 0 // asleep or paused: idle by design
		}
		run, wait, kv := u.ep.Trend.RunMean, u.ep.Trend.WaitMean, u.st.KVUsage
		util := endpointGPUUtil(x.f, u.ep, x.f.Window)
		switch {
		case bad(run) || bad(wait) || bad(kv) || u.ep.Trend.Span < x.f.Window/2:
			return condUnknown, 0
		case run > 2*p[guBatch] || wait > p[guWaiting]:
			return condClear, 0
		case run <= p[guBatch] && wait <= p[guWaiting] && kv < p[guKV] && (bad(util) || util < p[guGPUUtil]):
			// Nothing waits: a capacity note, never an alarm.
			return condMet, diagnose.SevInfo
		}
		return condHold, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st := u.st
		util := endpointGPUUtil(x.f, u.ep, x.f.Window)
		fd.Summary = say("batch ≈%s sequences, %s waiting, KV %s, %s req/s", num(u.ep.Trend.RunMean), num(u.ep.Trend.WaitMean), pct(st.KVUsage), num(st.ReqRate))
		fd.Evidence = []diagnose.Evidence{evNum("mean running", u.ep.Trend.RunMean, diagnose.UnitCount, u.ep.Trend.Span), evNum("mean waiting", u.ep.Trend.WaitMean, diagnose.UnitCount, u.ep.Trend.Span),
			evNum("KV usage", st.KVUsage, diagnose.UnitRatio, 0), evNum("finished", st.ReqRate, diagnose.UnitReqPerSec, st.Span), evNum("generation", st.GenTokRate, diagnose.UnitTokPerSec, st.Span)}
		if !bad(util) {
			fd.Summary = fd.Summary.Cat(say(", GPU %s%%", dec(util, 0)))
			fd.Evidence = append(fd.Evidence, evNum("GPU utilization", util/100, diagnose.UnitRatio, 0))
		}
		fd.Explain = plain("The engine runs a handful of sequences at a time with nothing waiting: a GPU batch of one or two costs almost as much per step as a batch of dozens, so most of its capacity is idle.")
		fd.Action = plain("this replica is mostly idle: serve this model from fewer replicas (or a smaller GPU / lower --tensor-parallel-size), or check that the router sends it its share")
		if _, n, _ := maxNumSeqsChange(u, 0.15, false); n > 0 {
			fd.Action = fd.Action.Cat(say("; its KV cache holds %d sequences (computed)", n))
		}
	},
	prom: func(g *promGen, p []float64) []promAlert {
		return []promAlert{{Severity: "info", Expr: fmt.Sprintf("avg_over_time((%s)[%s:]) <= %s and avg_over_time((%s)[%s:]) <= %s and %s < %s",
			g.gauge(sources.GRunning, "sum", byEndpoint), g.w, g.num(p[guBatch]),
			g.gauge(sources.GWaiting, "sum", byEndpoint), g.w, g.num(p[guWaiting]),
			g.gauge(sources.GKVUsage, "max", byEndpoint), g.num(p[guKV]))}}
	},
}
