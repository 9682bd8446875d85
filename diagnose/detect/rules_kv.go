package detect

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// KV-cache rules: thrashing, preemption, swapping, OOM risk, prefix cache.

// kv_cache_thrashing parameters, looked up by name: a check indexes its values
// through these.
var (
	kvtParams = params{
		{"kv_high", 0.90, "ratio", "KV usage at or above which the cache counts as full"},
		{"kv_clear", 0.80, "ratio", "KV usage below which the finding clears"},
		{"min_rate", 0.05, "per_s", "preemptions per second, at least"},
		{"share", 0.05, "ratio", "preemptions per finished request that count as thrashing"},
		{"critical", 0.5, "ratio", "preemptions per finished request that make it critical"},
		{"share_clear", 0.01, "ratio", "preemptions per finished request below which it clears"},
		{"headroom", 0.15, "ratio", "share of KV blocks the recommended --max-num-seqs leaves free"},
	}
	kvtHigh       = kvtParams.index("kv_high")
	kvtClear      = kvtParams.index("kv_clear")
	kvtMinRate    = kvtParams.index("min_rate")
	kvtShare      = kvtParams.index("share")
	kvtCritical   = kvtParams.index("critical")
	kvtShareClear = kvtParams.index("share_clear")
	kvtHeadroom   = kvtParams.index("headroom")
)

// preemptShare is preemptions per finished request over the window: V1
// preempts continuously under pressure, V0 in bouts, so a rate relative to
// the work done compares across generations and loads. Preemptions with no
// request finishing are +Inf; unknown completions are NaN.
func preemptShare(st *diagnose.Stats) float64 {
	pre, done := st.PreemptionsRate, st.ReqRate
	switch {
	case bad(pre) || bad(done):
		return math.NaN()
	case done > 0:
		return pre / done
	case pre > 0:
		return math.Inf(1)
	}
	return 0
}

var ruleKVThrashing = &Rule{
	ID: "kv_cache_thrashing", Title: "KV cache thrashing", Scope: ScopeEngine,
	Catches:  "More sequences than the KV cache holds: it is pinned near full, the scheduler preempts running requests (V1 drops their KV and recomputes it later; V0 recomputes or swaps) and TTFT inflates.",
	Needs:    "KV usage (kv_cache_usage_perc / gpu_cache_usage_perc), preemptions (V0 ≥0.4.3, V1 ≥0.8), finished requests, TTFT histogram",
	Cond:     "KV usage ≥ {kv_high}, preemptions ≥ {min_rate} and ≥ {share} of finished requests over the window, and TTFT p95 above the SLO profile's TTFT target",
	Clear:    "preemptions < {share_clear} of finished requests, or KV usage < {kv_clear} with preemptions below {min_rate} (a cache that still preempts is full at those steps, whatever one reading says)",
	Severity: "warning; critical at preemptions ≥ {critical} of finished requests",
	Action:   "lower --max-num-seqs to what the KV cache holds at the measured average sequence length with {headroom} headroom (computed from cache_config_info's num_gpu_blocks × block_size); more KV: --gpu-memory-utilization up to vLLM's default 0.90 when deployed below it, --kv-cache-dtype fp8; first, when the prefix-cache hit rate fell to matching nothing shared before the cache filled (a workload change), restore the shared prefix: each request now holds its own copy of it",
	For:      2 * time.Minute, ResolveFor: 2 * time.Minute,
	Params: kvtParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		kv, pre, ttft := u.st.KVUsage, u.st.PreemptionsRate, u.st.TTFT.P95
		share := preemptShare(u.st)
		switch {
		case bad(kv) || bad(pre) || math.IsNaN(share):
			return condUnknown, 0
		case share < p[kvtShareClear] || kv < p[kvtClear] && pre < p[kvtMinRate]:
			// A preemption is a step that found the cache full: while they
			// go on, one low reading does not clear it (clients giving up
			// in its queue free blocks as their requests end: a 14B read
			// 65 % while preempting 1.1/s, and the thrashing resolved).
			return condClear, 0
		case kv >= p[kvtHigh] && pre >= p[kvtMinRate] && share >= p[kvtShare] && !bad(ttft) && ttft > x.slo.TTFT.Seconds():
			x.over = share / p[kvtShare]
			if share >= p[kvtCritical] {
				return condMet, diagnose.SevCritical
			}
			return condMet, diagnose.SevWarning
		}
		return condHold, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st, w := u.st, u.st.Span
		fd.Summary = say("preemptions %s/s (%s per finished request), KV %s, TTFT p95 %s (%s target %s)",
			num(st.PreemptionsRate), shareWords(preemptShare(st)), pct(st.KVUsage), qsecs(&st.TTFT, st.TTFT.P95), x.slo.Name, dur(x.slo.TTFT)).Cat(afterWorkload(u, pressureSince(x, fd)))
		fd.Evidence = kvEvidence(u, w)
		fd.Evidence = append(fd.Evidence, evQ("TTFT p95", &st.TTFT, st.TTFT.P95, w))
		fd.Explain = plain("The engine runs more sequences than its KV cache holds. " + preemptWords(u.ep.Version) +
			" Each preemption throws away computed KV and redoes the prefill later, so GPU time goes to recomputation and new requests wait longer for their first token.")
		fd.Flags, fd.Action = kvAdvice(x, u, p[kvtHeadroom], pressureSince(x, fd))
	},
	prom: func(g *promGen, p []float64) []promAlert {
		pre := g.rate(sources.CPreemptions, byEngine)
		share := fmt.Sprintf("%s / %s", pre, g.labeledRate(sources.LFinished, "", byEngine))
		base := fmt.Sprintf("%s >= %s and %s >= %s and %s >= %s and %s > %s",
			g.gauge(sources.GKVUsage, "max", byEngine), g.num(p[kvtHigh]),
			pre, g.num(p[kvtMinRate]), share, g.num(p[kvtShare]),
			g.quantile(0.95, sources.HTTFT, byEngine), g.num(g.slo.TTFT.Seconds()))
		return []promAlert{
			{Severity: "warning", Expr: base},
			{Severity: "critical", Expr: fmt.Sprintf("%s and %s >= %s", base, share, g.num(p[kvtCritical]))},
		}
	},
}

func preemptWords(v sources.VersionRange) string {
	switch v.Gen {
	case sources.GenV1:
		return "vLLM V1 preempts a running request when a step needs blocks that are not free: its KV is freed and recomputed when it resumes."
	case sources.GenV0:
		return "vLLM V0 preempts a running sequence group when blocks run out: by recompute, or by swapping its KV to CPU (--swap-space) for groups with several sequences."
	}
	return "vLLM preempts running requests when blocks run out."
}

// shareWords renders preemptions per finished request: 0.94, or "all"
// when none finished.
func shareWords(v float64) diagnose.Value {
	if math.IsInf(v, 1) {
		return diagnose.Str("none finished")
	}
	return dec(v, 2)
}

// perFinished is preemptions per finished request; with none finished
// (+Inf) it says so in words, as no number does.
func perFinished(v float64, w time.Duration) diagnose.Evidence {
	if math.IsInf(v, 1) {
		return ev("preemptions per finished request", "none finished", w)
	}
	return evNum("preemptions per finished request", v, diagnose.UnitNumber, w)
}

func kvEvidence(u *unit, w time.Duration) []diagnose.Evidence {
	st := u.st
	// Room for all eleven at once: described every second on every
	// endpoint it holds on, appended to it grew twice.
	out := append(make([]diagnose.Evidence, 0, 11),
		evNum("KV usage", st.KVUsage, diagnose.UnitRatio, 0),
		evNum("preemptions", st.PreemptionsRate, diagnose.UnitPerSec, w),
		perFinished(preemptShare(st), w),
		evNum("running", st.Running, diagnose.UnitCount, 0),
		evNum("waiting", st.Waiting, diagnose.UnitCount, 0),
	)
	if !bad(st.KVCapacityTokens) {
		out = append(out, evNum("KV blocks", st.NumGPUBlocks, diagnose.UnitCount, 0), evNum("KV block size", st.BlockSize, diagnose.UnitTokens, 0),
			evNum("KV capacity", st.KVCapacityTokens, diagnose.UnitTokens, 0))
	}
	if s := avgSeq(st); !bad(s) {
		out = append(out, evNum("avg sequence", s, diagnose.UnitTokens, w), evNum("avg prompt", st.AvgPromptLen, diagnose.UnitTokens, w),
			evNum("avg generated", st.AvgGenLen, diagnose.UnitTokens, w))
	}
	return out
}

// kvAdvice is the shared advice of the KV-pressure rules, whose pressure
// began at since (the finding's first evaluation that met its condition).
func kvAdvice(x *evalCtx, u *unit, headroom float64, since time.Time) ([]diagnose.FlagChange, diagnose.Text) {
	var flags []diagnose.FlagChange
	var action []diagnose.Text
	fc, n, lever := maxNumSeqsChange(u, headroom, true)
	switch {
	case lever:
		flags = append(flags, fc)
		if !fc.From.IsZero() {
			action = append(action, say("lower --max-num-seqs %s → %s", fc.From, fc.To))
		} else {
			action = append(action, say("set --max-num-seqs to %s", fc.To))
		}
	case n > 0 && u.ep.MaxNumSeqs > 0 && n >= u.ep.MaxNumSeqs:
		// What the cache fits is the evidence, unrounded.
		action = append(action, say("--max-num-seqs %d already fits %d sequences: longer-than-average requests fill the cache; cap them (--max-model-len, clients' max_tokens) or add KV capacity", u.ep.MaxNumSeqs, int(fc.Exact)))
	case n > 0:
		action = append(action, say("the KV cache fits %d sequences at what running ones hold now, not fewer than run: a lower --max-num-seqs would not relieve it; cap request length (--max-model-len, clients' max_tokens) or add KV capacity", int(fc.Exact)))
	default:
		flags = append(flags, fc)
		action = append(action, say("--max-num-seqs: %s", fc.To))
	}
	// More KV capacity is another way out, not a change to make beside a
	// lower --max-num-seqs computed for today's cache: each is its own
	// premise, and applying one moves what the others were computed for.
	alts := 0
	shrunk := shrunkAtRestart(u, since)
	restore := shrunk != nil && shrunk.MemUtilBefore > shrunk.MemUtilAfter+0.005
	if f, ok := raiseMemUtilFlag(u.st.GPUMemUtil); ok && !restore {
		f.Alt = len(flags) > 0
		flags = append(flags, f)
		action = append(action, say("raise --gpu-memory-utilization %s → %s", f.From, f.To))
		alts++
		if len(flags) > 1 && memoryFree(x, u.ep, defaultGPUMemUtil-u.st.GPUMemUtil) {
			// Its GPUs hold the memory a raise takes, free: a cache
			// deployed small is the first way out, before a batch cut
			// to what it fits (a redeploy at 0.27 read "--max-num-seqs
			// → 11" first, 57 GiB of its GPU free).
			n := len(flags) - 1
			flags[0].Alt, flags[n].Alt = true, false
			flags = append([]diagnose.FlagChange{flags[n]}, flags[:n]...)
			a := len(action) - 1
			action = append([]diagnose.Text{action[a]}, action[:a]...)
		}
	}
	blocks, _, _ := engineCache(u)
	if f, ok := kvDtypeFlag(u.ep, blocks); ok {
		f.Alt = len(flags) > 0
		flags = append(flags, f)
		action = append(action, plain("--kv-cache-dtype fp8 for about twice the KV blocks"))
		alts++
	}
	var out diagnose.Text
	if alts > 0 && len(action) > 1 {
		out = diagnose.Join(action, ", or ").Cat(plain(": apply one, then recompute (each changes the KV capacity the others were computed for)"))
	} else {
		out = diagnose.Join(action, "; ")
	}
	if r := shrunk; r != nil {
		// A deploy restarted the engine with a smaller KV cache before
		// the pressure began: what it changed is the fix, the cache's
		// other flags are sized for today's smaller cache.
		head := say("first the restart at %s: it came back with %s, and the cache filled after it; ", clock(r.At), r.CacheWords())
		if restore {
			fc := diagnose.FlagChange{Flag: "--gpu-memory-utilization", From: util2(r.MemUtilAfter), To: util2(r.MemUtilBefore),
				Why: say("as before the restart at %s, whose KV cache held %s tokens (now %s); first check that what the deploy freed the memory for does not need it", clock(r.At), num(r.KVBefore), num(r.KVAfter))}
			return []diagnose.FlagChange{fc}, head.Add("restore --gpu-memory-utilization %s → %s (what the deploy changed); until then, for today's cache: ", fc.From, fc.To).Cat(out)
		}
		return nil, head.Cat(plain("restore what the deploy changed in the cache's size; until then, for today's cache: ")).Cat(out)
	}
	if ns := neighbors(x, u.ep); len(ns) > 0 {
		if why, slowed := neighborSlowed(x, u); slowed {
			// Steps that wait for another process's kernels hold every
			// request, and its blocks, longer: the cache fills with the
			// same traffic. Its flags trade the batch for time the other
			// process takes. Said, not advised: no flag heads it.
			return nil, say("first the other process on its GPU: %s, and the engine slowed (%s): every step waits for its kernels, so each request holds its blocks longer and the cache fills; move it off the serving GPU; until then, for today's slower steps: ",
				neighborWords(ns), why).Cat(out)
		}
	}
	if cut := runawayShift(u.ep.Shifts); cut != nil {
		// Answers that run on to max_tokens hold their blocks for every
		// step: the cache's flags trade the batch for answers nobody
		// reads. Said, not advised: no flag heads it.
		return nil, say("first the answers: since %s %s of them end at a limit (%s before), running on to max_tokens and holding their blocks all the while (see Answers run to their limit); until they stop on their own again, for today's runaway answers: ",
			clock(runawayOnset(u.ep.Shifts, cut)), pct(cut.After), pct(cut.Before)).Cat(out)
	}
	if v := &u.ep.Verdict; v.Limit == diagnose.LimitRouting {
		// The router sends this replica the load that fills its cache
		// while its pool has room: routing by load empties it; the
		// cache's flags trade this replica's batch for load that
		// belongs on its peers. Said, not advised: no flag heads it.
		return nil, say("first the router: this replica receives more than it serves while the pool's arrivals fill about %s of its %d replicas at what it serves (see the bottleneck line): route by outstanding requests and this cache empties; until then, for today's load here: ",
			dec(v.ReplicasAt, 1), v.Now).Cat(out)
	}
	if s := prefixLost(u, since); s != nil {
		// With prefix caching a shared prefix's blocks are held once,
		// by reference, for every running request that begins with it;
		// once prompts stop matching (a request id at the top of the
		// system prompt), each request holds its own copy, and the same
		// cache fits fewer sequences. The cache's flags are sized for
		// the unshared prompts: a stopgap, not the fix.
		out = say("first the prefix cache: its hit rate fell %s → %s at %s, before the cache filled, so each request holds its own copy of the prefix the requests shared (held once for all while it matched) and the cache fits fewer sequences; restore the shared prefix (what changed in the clients' prompts at %s: see the workload change); until then, sized for today's unshared prompts: ",
			pct(s.Before), pct(s.After), clock(s.Onset), clock(s.Onset)).Cat(out)
		// No flag heads the advice: the fix is the clients' prompts (a
		// screen shows a finding's flags first; "--kv-cache-dtype
		// auto→fp8" read as the fix). The stopgap's flags are in the
		// action's words.
		if fc := draftsFirst(u); fc == nil {
			return nil, out
		}
	}
	if fc := draftsFirst(u); fc != nil {
		// The drafts bind before the cache: a slower decode holds every
		// sequence, and its blocks, longer. The cache's flags are sized
		// for today's slow decode: the drafts' flag is the one to apply;
		// the cache's are said, not advised, for after.
		out = plain("first the drafts (the binding limit: speculative decoding, see its finding): a decode slowed by rejected drafts holds every sequence and its blocks longer; then recompute if it still preempts (at today's slow decode: ").Cat(out).Cat(plain(")"))
		return []diagnose.FlagChange{*fc}, out
	}
	return flags, out
}

// memoryFree says every GPU of ep holds frac of its memory free (read, not
// stale): what raising --gpu-memory-utilization by frac takes.
func memoryFree(x *evalCtx, ep *diagnose.EndpointView, frac float64) bool {
	if len(ep.GPU.GPUs) == 0 || ep.GPU.Stale || frac <= 0 {
		return false
	}
	for _, gi := range ep.GPU.GPUs {
		if gi < 0 || gi >= len(x.f.GPU.GPUs) {
			return false
		}
		g := &x.f.GPU.GPUs[gi]
		if bad(g.MemTotal) || bad(g.MemUsed) || g.MemTotal <= 0 || g.MemTotal-g.MemUsed < frac*g.MemTotal {
			return false
		}
	}
	return true
}

// shrunkAtRestart is the newest restart within workloadLead before a
// KV-pressure finding's since that came back with a KV cache a quarter
// smaller or more than the process before it had; nil when none.
func shrunkAtRestart(u *unit, since time.Time) *diagnose.Restart {
	rs := u.ep.Restarts
	for i := len(rs) - 1; i >= 0; i-- {
		r := &rs[i]
		if r.At.After(since) {
			continue
		}
		if since.Sub(r.At) > workloadLead {
			return nil
		}
		if r.KVBefore > 0 && r.KVAfter > 0 && r.KVAfter <= 0.75*r.KVBefore {
			return r
		}
		return nil // the newest restart before it is what the cache came back with
	}
	return nil
}

// prefixLost is the fall of the prefix-cache hit rate, by its least change
// at least, that began before the cache's pressure did (since) and has
// not come back, to a level at which the cache matches nothing a request
// shares (under prefix_cache_miss's matched tokens per request): nil
// otherwise. The rate alone falls when prompts grow around the same
// shared system prompt (documents in every prompt), which still matches
// and is still held once. A fall that follows the pressure is its
// consequence (a full cache evicts the cached prefixes no request holds),
// not its cause.
func prefixLost(u *unit, since time.Time) *diagnose.Shift {
	st := u.st
	if bad(st.PrefixQueryRate) || bad(st.ReqRate) || st.ReqRate <= 0 {
		return nil
	}
	for i := range u.ep.Shifts {
		s := &u.ep.Shifts[i]
		if s.Signal != diagnose.SigPrefixHit || !(s.Before-s.After >= prefixLostBy) || !s.Ended.IsZero() && !s.Accepted {
			continue
		}
		// Matched per request at the level since the fall (the window's
		// ratio still holds the hits before it for a window).
		if s.After*st.PrefixQueryRate/st.ReqRate >= pcParams[pcMatched].Default {
			continue
		}
		if s.Onset.After(since) {
			continue
		}
		return s
	}
	return nil
}

// afterWorkload says the change of traffic that began before a finding's
// pressure did (since), within workloadLead of it, and is still open:
// "; after prompt mean 940 → 6.1k tokens (×6.5) at 14:02:01", empty when
// none. What changed, in the cause's own line: the flags beside it are
// sized for the new traffic. Answers that run away say themselves in the
// advice (kvAdvice).
func afterWorkload(u *unit, since time.Time) diagnose.Text {
	if runawayShift(u.ep.Shifts) != nil {
		return diagnose.Text{} // the advice says the answers first
	}
	var lead *diagnose.Shift
	for _, s := range trafficShifts(u) {
		if s.Kind != diagnose.ShiftWorkload || !s.Ended.IsZero() || s.Onset.After(since) || since.Sub(s.Onset) > workloadLead || !fillsCache(&s) {
			continue
		}
		if lead == nil || s.Onset.Before(lead.Onset) {
			lead = &s
		}
	}
	if lead == nil {
		return diagnose.Text{}
	}
	return say("; after %s at %s", lead.Words(), clock(lead.Onset))
}

// fillsCache: a change of traffic that asks more of the KV cache: more
// arrivals or prompt tokens, longer prompts or answers, fewer prefix
// matches. Falls of the others (fewer, shorter requests) and the abort
// share do not fill it.
func fillsCache(s *diagnose.Shift) bool {
	switch s.Signal {
	case diagnose.SigArrivals, diagnose.SigPromptTok, diagnose.SigPromptLen, diagnose.SigGenLen:
		return s.After > s.Before
	case diagnose.SigPrefixHit:
		return s.After < s.Before
	}
	return false
}

// workloadLead bounds how long before a finding's pressure a change of
// traffic is said as what preceded it.
const workloadLead = 10 * time.Minute

// pressureSince is when a KV-pressure finding's condition first held: its
// first sighting, or now for one described before it has one.
func pressureSince(x *evalCtx, fd *diagnose.Finding) time.Time {
	if fd.FirstSeen.IsZero() {
		return x.now
	}
	return fd.FirstSeen
}

// coldFor is how long after a restart's window a prefix cache is still
// warming: its shared prefixes are computed once each, then hit.
const coldFor = 30 * time.Second

// prefixLostBy is the fall of the prefix-cache hit rate (points) that
// loses the sharing, the shift's own least change.
const prefixLostBy = 0.2

// draftsFirst is the drafts' flag change when they bind before the
// cache: the verdict names them, or, in its first seconds (too few points
// for a verdict), the acceptance the verdict will read is already below
// what a draft costs (the flag said at 10 s was --max-num-seqs, at 40 s
// the drafts'). Nil otherwise.
func draftsFirst(u *unit) *diagnose.FlagChange {
	switch v := &u.ep.Verdict; v.Limit {
	case diagnose.LimitSpecDecode:
		return v.Flag
	case diagnose.LimitFewData, diagnose.LimitNone:
		if acc, k := specAcceptance(u.st); !bad(acc) && acc < draftCost {
			return specFlag(acc, k)
		}
	}
	return nil
}

// preemption parameters, looked up by name: a check indexes its values
// through these.
var (
	prParams = params{
		{"min_rate", 0.02, "per_s", "preemptions per second, at least"},
		{"share", 0.01, "ratio", "preemptions per finished request that count"},
		{"critical", 0.25, "ratio", "preemptions per finished request that make it critical"},
		{"share_clear", 0.002, "ratio", "preemptions per finished request below which it clears"},
		{"headroom", 0.15, "ratio", "share of KV blocks the recommended --max-num-seqs leaves free"},
	}
	prMinRate    = prParams.index("min_rate")
	prShare      = prParams.index("share")
	prCritical   = prParams.index("critical")
	prShareClear = prParams.index("share_clear")
	prHeadroom   = prParams.index("headroom")
)

var rulePreemption = &Rule{
	ID: "preemption", Title: "Sustained preemption", Scope: ScopeEngine,
	Catches:    "Any sustained preemption: the leading sign of KV capacity exhaustion, before latency shows it (V1: recompute). More than about 1% of requests preempted means KV pressure.",
	Needs:      "preemptions (V0 ≥0.4.3, V1 ≥0.8), finished requests",
	Cond:       "preemptions ≥ {min_rate} and ≥ {share} of finished requests over the window",
	Clear:      "preemptions < {share_clear} of finished requests",
	Severity:   "warning; critical at ≥ {critical} of finished requests",
	Action:     "the --max-num-seqs that fits the KV cache with {headroom} headroom (computed), or more KV capacity; first, when the prefix-cache hit rate fell to matching nothing shared before the cache filled (a workload change), restore the shared prefix: each request now holds its own copy of it",
	For:        5 * time.Minute,
	ResolveFor: 2 * time.Minute,
	Params:     prParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		pre, share := u.st.PreemptionsRate, preemptShare(u.st)
		switch {
		case bad(pre) || math.IsNaN(share):
			return condUnknown, 0
		case share < p[prShareClear]:
			return condClear, 0
		case pre >= p[prMinRate] && share >= p[prCritical]:
			x.over = share / p[prShare]
			return condMet, diagnose.SevCritical
		case pre >= p[prMinRate] && share >= p[prShare]:
			x.over = share / p[prShare]
			return condMet, diagnose.SevWarning
		}
		return condHold, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st := u.st
		fd.Summary = say("preemptions %s/s (%s per finished request) at KV %s", num(st.PreemptionsRate), shareWords(preemptShare(st)), pct(st.KVUsage))
		if !bad(st.KVUsageMax) && st.KVUsageMax >= st.KVUsage+0.1 {
			// A preemption is a step that found the cache full: the
			// reading now can be long after it ("at KV 0.9%" read as
			// a contradiction).
			fd.Summary = say("preemptions %s/s (%s per finished request), KV up to %s in the window (%s now)", num(st.PreemptionsRate), shareWords(preemptShare(st)), pct(st.KVUsageMax), pct(st.KVUsage))
		}
		fd.Summary = fd.Summary.Cat(afterWorkload(u, pressureSince(x, fd)))
		fd.Evidence = kvEvidence(u, st.Span)
		fd.Explain = plain(preemptWords(u.ep.Version) + " A steady rate means the KV cache is too small for the concurrency it is asked to run; every preemption repeats a prefill.")
		fd.Flags, fd.Action = kvAdvice(x, u, p[prHeadroom], pressureSince(x, fd))
	},
	prom: func(g *promGen, p []float64) []promAlert {
		r := g.rate(sources.CPreemptions, byEngine)
		share := fmt.Sprintf("%s / %s", r, g.labeledRate(sources.LFinished, "", byEngine))
		return []promAlert{
			{Severity: "warning", Expr: fmt.Sprintf("%s >= %s and %s >= %s", r, g.num(p[prMinRate]), share, g.num(p[prShare]))},
			{Severity: "critical", Expr: fmt.Sprintf("%s >= %s and %s >= %s", r, g.num(p[prMinRate]), share, g.num(p[prCritical]))},
		}
	},
}

// swapping parameters, looked up by name: a check indexes its values
// through these.
var (
	swParams = params{
		{"cpu_kv", 0.01, "ratio", "CPU (swap) KV usage that counts as swapping"},
		{"headroom", 0.15, "ratio", "share of KV blocks the recommended --max-num-seqs leaves free"},
	}
	swCPUKV    = swParams.index("cpu_kv")
	swHeadroom = swParams.index("headroom")
)

var ruleSwapping = &Rule{
	ID: "swapping", Title: "Swapping to CPU", Scope: ScopeEngine,
	Catches:  "V0 engines swapping preempted sequences' KV to CPU memory: requests swapped out or CPU KV space in use. Latency spikes while blocks move over PCIe.",
	Needs:    "V0 only: num_requests_swapped, cpu_cache_usage_perc (hidden from 0.8.3, gone in 0.9.1); V1 never swaps",
	Cond:     "a request swapped at any scrape of the window, or CPU KV usage ≥ {cpu_kv}",
	Clear:    "no request swapped within the window and CPU KV usage < {cpu_kv}",
	Severity: "critical",
	Action:   "stabilise first: the --max-num-seqs that fits the GPU KV cache with {headroom} headroom (computed); then more KV (--kv-cache-dtype fp8) or another replica",
	For:      time.Minute, ResolveFor: 2 * time.Minute,
	Params: swParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		sw, cpu := swappedInWindow(x, u), u.st.CPUKVUsage
		switch {
		case bad(sw) && bad(cpu):
			return condUnknown, 0
		case sw >= 1 || (!bad(cpu) && cpu >= p[swCPUKV]):
			return condMet, diagnose.SevCritical
		}
		return condClear, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st := u.st
		most := swappedInWindow(x, u)
		fd.Summary = say("up to %s requests swapped in %s (%s now), CPU KV %s, GPU KV %s", num(most), dur(x.f.Window), num(st.Swapped), pct(st.CPUKVUsage), pct(st.KVUsage))
		fd.Evidence = append([]diagnose.Evidence{evNum("swapped, most", most, diagnose.UnitCount, x.f.Window), evNum("swapped now", st.Swapped, diagnose.UnitCount, 0),
			evNum("CPU KV usage", st.CPUKVUsage, diagnose.UnitRatio, 0)}, kvEvidence(u, st.Span)...)
		fd.Explain = plain("The V0 scheduler ran out of GPU KV blocks and moved preempted sequence groups (those with several sequences: n>1, beam search) to CPU memory. They stall until swapped back, and every swap crosses PCIe.")
		fd.Flags, fd.Action = kvAdvice(x, u, p[swHeadroom], pressureSince(x, fd))
	},
	prom: func(g *promGen, p []float64) []promAlert {
		return []promAlert{{Severity: "critical", Expr: fmt.Sprintf("max_over_time((%s)[%s:]) >= 1 or %s >= %s",
			g.gauge(sources.GSwapped, "sum", byEngine), g.w, g.gauge(sources.GCPUKVUsage, "max", byEngine), g.num(p[swCPUKV]))}}
	},
}

// swappedInWindow is the most requests swapped at any scrape of the window:
// V0 swaps in bouts, so the gauge now is often 0 while swapping goes on.
// The sparkline is per endpoint, so it speaks for a unit only when the
// endpoint has one engine (always, for V0).
func swappedInWindow(x *evalCtx, u *unit) float64 {
	sw := u.st.Swapped
	if len(u.ep.Subs) <= 1 {
		sw = diagnose.NaNMax(sw, u.ep.Trend.SwapMax)
	}
	return sw
}

// oom_risk parameters, looked up by name: a check indexes its values
// through these.
var (
	oomParams = params{
		{"util_edge", 0.95, "ratio", "gpu_memory_utilization at or above which headroom is too thin"},
		{"kv_high", 0.90, "ratio", "KV usage that counts as full"},
		{"mem_edge", 0.97, "ratio", "GPU memory used / total that counts as the edge"},
		{"headroom", 0.05, "ratio", "free GPU memory the recommendation aims for"},
		{"step", 0.05, "ratio", "step down of gpu_memory_utilization without a GPU reading"},
	}
	oomUtilEdge = oomParams.index("util_edge")
	oomKVHigh   = oomParams.index("kv_high")
	oomMemEdge  = oomParams.index("mem_edge")
	oomHeadroom = oomParams.index("headroom")
	oomStep     = oomParams.index("step")
)

var ruleOOMRisk = &Rule{
	ID: "oom_risk", Title: "Out-of-memory risk", Scope: ScopeEngine,
	Catches:  "KV cache full on an engine whose --gpu-memory-utilization leaves the GPU almost no headroom for activations and other processes: the next long batch can die with CUDA out of memory.",
	Needs:    "KV usage, cache_config_info's gpu_memory_utilization; the GPU's memory reading when vtop runs on the node",
	Cond:     "KV usage ≥ {kv_high} and (gpu_memory_utilization ≥ {util_edge}, or the GPU's used memory ≥ {mem_edge} of its total)",
	Clear:    "KV usage < {kv_high} − 10 points, or neither memory condition holds",
	Severity: "warning; critical when the GPU reading shows used ≥ {mem_edge}",
	Action:   "lower --gpu-memory-utilization: to leave {headroom} of the GPU free when its memory reading is there, else in steps of {step}",
	For:      5 * time.Minute, ResolveFor: 5 * time.Minute,
	Params: oomParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		kv, util := u.st.KVUsage, u.st.GPUMemUtil
		used, total := gpuMem(x, u)
		memEdge := !bad(used) && !bad(total) && total > 0 && used/total >= p[oomMemEdge]
		utilEdge := !bad(util) && util >= p[oomUtilEdge]
		switch {
		case bad(kv) || (bad(util) && (bad(used) || bad(total))):
			return condUnknown, 0
		case kv >= p[oomKVHigh] && memEdge:
			return condMet, diagnose.SevCritical
		case kv >= p[oomKVHigh] && utilEdge:
			return condMet, diagnose.SevWarning
		case kv < p[oomKVHigh]-0.1 || (!memEdge && !utilEdge):
			return condClear, 0
		}
		return condHold, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st := u.st
		used, total := gpuMem(x, u)
		fd.Summary = say("KV %s with --gpu-memory-utilization %s", pct(st.KVUsage), util2(st.GPUMemUtil))
		fd.Evidence = []diagnose.Evidence{evNum("KV usage", st.KVUsage, diagnose.UnitRatio, 0), evNum("gpu_memory_utilization", st.GPUMemUtil, diagnose.UnitNumber, 0)}
		if !bad(used) && !bad(total) {
			fd.Summary = fd.Summary.Cat(say(", GPU memory %s of %s", mib(used), mib(total)))
			fd.Evidence = append(fd.Evidence, evNum("GPU memory used", used, diagnose.UnitBytes, 0), evNum("GPU memory total", total, diagnose.UnitBytes, 0),
				evNum("GPU memory share", used/total, diagnose.UnitRatio, 0))
		}
		fd.Explain = plain("vLLM reserves gpu_memory_utilization of the GPU for weights, activations and the KV cache. With the cache full and little memory left outside that reservation, a long prefill, a CUDA graph, or another process on the GPU can hit CUDA out of memory and kill the engine.")
		step, miss := LowerMemUtil(st.GPUMemUtil, used, total, p[oomHeadroom], p[oomStep])
		if miss != "" {
			fd.Flags = []diagnose.FlagChange{{Flag: "--gpu-memory-utilization", To: diagnose.Str("cannot compute: " + miss)}}
			fd.Action = plain("--gpu-memory-utilization: " + miss)
			return
		}
		fd.Flags = []diagnose.FlagChange{{Flag: "--gpu-memory-utilization", From: util2(step.From), To: util2(step.To), Why: step.Why}}
		fd.Action = say("lower --gpu-memory-utilization %s → %s (fewer KV blocks: pair it with the --max-num-seqs they fit)", util2(step.From), util2(step.To))
	},
	prom: func(g *promGen, p []float64) []promAlert {
		return []promAlert{{Severity: "warning", Expr: fmt.Sprintf("%s >= %s and on(job, instance, engine) %s",
			g.gauge(sources.GKVUsage, "max", byEngine), g.num(p[oomKVHigh]),
			g.cacheInfo(fmt.Sprintf(`%s=~"%s"`, sources.CCGPUMemUtil, geRegex(p[oomUtilEdge]))))}}
	},
}

// gpuMem returns the GPU memory the unit's endpoint holds and the total of
// its GPUs, NaN when vtop has no GPU reading for it.
func gpuMem(x *evalCtx, u *unit) (used, total float64) {
	return endpointGPUMem(x.f, u.ep)
}

// prefix_cache_miss parameters, looked up by name: a check indexes its values
// through these.
var (
	pcParams = params{
		{"hit_low", 0.10, "ratio", "hit ratio below which caching is not working"},
		{"hit_clear", 0.20, "ratio", "hit ratio at or above which it clears"},
		{"min_prompt_rate", 100, "count", "prompt tokens per second below which hit ratios say nothing"},
		{"min_tokens", 20000, "count", "prompt tokens in the window below which the ratio is noise (a cache still warming up)"},
		{"matched", 32, "count", "prompt tokens the cache matches per finished request from which a shared prefix does hit (two 16-token blocks)"},
	}
	pcHitLow    = pcParams.index("hit_low")
	pcHitClear  = pcParams.index("hit_clear")
	pcMinPrompt = pcParams.index("min_prompt_rate")
	pcMinTokens = pcParams.index("min_tokens")
	pcMatched   = pcParams.index("matched")
)

// matchedPerRequest is the prompt tokens the prefix cache matched per
// finished request over the window (NaN unknown: V0's gauge, no
// completions). The cache matches whole blocks from the first token: a
// prefix broken at its top (a request id, a timestamp) matches nothing,
// under a block or two a request; prompts that share a system prompt and
// then go their own way (RAG over unique documents) match that prefix on
// every request and miss the rest, which no cache could give. A low hit
// ratio is then the workload's shape, not a fault to fix.
func matchedPerRequest(st *diagnose.Stats) float64 {
	if bad(st.PrefixHitRatio) || bad(st.PrefixQueryRate) || bad(st.ReqRate) || st.ReqRate <= 0 {
		return math.NaN()
	}
	return st.PrefixHitRatio * st.PrefixQueryRate / st.ReqRate
}

// prefixSeen remembers the last time an endpoint's prefix cache matched
// (hit ratio at hit_clear's default or above, with traffic): a cache that
// matched and stopped is broken; one never seen matching may serve
// prompts that share nothing.
type prefixSeen struct {
	at  time.Time
	hit float64
}

func (m *prefixSeen) observe(ep *diagnose.EndpointView, now time.Time) {
	st := &ep.Stats
	if !bad(st.PrefixHitRatio) && !bad(st.PromptTokRate) && st.PrefixHitRatio >= pcParams[pcHitClear].Default && st.PromptTokRate >= pcParams[pcMinPrompt].Default {
		m.at, m.hit = now, st.PrefixHitRatio
	}
}

// prefixFell is when and from what the endpoint's prefix cache last
// matched: the onset and level of a fall of its hit rate (a Prometheus
// backfill's history dates it), else the last reading that matched (zero
// time: never seen matching).
func prefixFell(u *unit) (time.Time, float64) {
	for i := range u.ep.Shifts {
		if s := &u.ep.Shifts[i]; s.Signal == diagnose.SigPrefixHit && s.Before-s.After >= prefixLostBy && (s.Ended.IsZero() || s.Accepted) {
			return s.Onset, s.Before
		}
	}
	if m := memoryOf[*prefixSeen](u); !m.at.IsZero() {
		return m.at, m.hit
	}
	return time.Time{}, math.NaN()
}

var rulePrefixMiss = &Rule{
	ID: "prefix_cache_miss", Title: "Prefix cache misses", Scope: ScopeEngine,
	memory:     func() ruleMemory { return &prefixSeen{} },
	Catches:    "Prefix caching is on but almost nothing matches (a per-request id or timestamp at the top of a shared system prompt, prompts routed away from their cache); or caching is off (info: vLLM cannot tell whether prompts would share prefixes).",
	Needs:      "cache_config_info's enable_prefix_caching; prefix-cache hit and query counters (V1 ≥0.7.3) or V0's hit-rate gauge",
	Cond:       "caching on, prompt tokens ≥ {min_prompt_rate} tokens/s and ≥ {min_tokens} in the window, hit ratio < {hit_low}, and under {matched} tokens matched per finished request (nothing shared hits; unknown per request: the ratio alone), not within a window and 30 s of a restart (the cache starts empty); or caching off (info)",
	Clear:      "hit ratio ≥ {hit_clear}, traffic below {min_prompt_rate} tokens/s, or {matched} tokens or more matched per request (a shared prefix hits; the rest of the prompts is unique, which no cache can give)",
	Severity:   "warning once the cache was seen matching (a hit ratio ≥ {hit_clear} before, or a fall in the history read); info when never seen matching (prompts that share nothing read the same) or caching is off",
	Action:     "keep the shared part of prompts byte-identical and first, route one prefix to one replica; when off: --enable-prefix-caching (V1 enables it by default: remove --no-enable-prefix-caching)",
	For:        5 * time.Minute,
	ResolveFor: 5 * time.Minute,
	Params:     pcParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		st := u.st
		if st.PrefixCaching == sources.TriNo {
			return condMet, diagnose.SevInfo
		}
		hit, tok := st.PrefixHitRatio, st.PromptTokRate
		switch {
		case bad(hit) || bad(tok):
			return condUnknown, 0
		case tok < p[pcMinPrompt] || hit >= p[pcHitClear]:
			return condClear, 0
		case matchedPerRequest(st) >= p[pcMatched]:
			return condClear, 0
		case tok*st.Span.Seconds() < p[pcMinTokens]:
			return condHold, 0
		case !u.ep.RestartedAt.IsZero() && x.now.Sub(u.ep.RestartedAt) < x.f.Window+coldFor:
			// A restarted engine's prefix cache starts empty: its first
			// prompts miss and the window holds them (SGLang read "hit 0%:
			// find what changed in the prompts at" its restart).
			return condHold, 0
		case hit < p[pcHitLow]:
			if at, _ := prefixFell(u); at.IsZero() {
				return condMet, diagnose.SevInfo
			}
			return condMet, diagnose.SevWarning
		}
		return condHold, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st := u.st
		if st.PrefixCaching == sources.TriNo {
			fd.Summary = plain("prefix caching is off")
			fd.Evidence = []diagnose.Evidence{ev("enable_prefix_caching", "False", 0), evNum("prompt tokens", st.PromptTokRate, diagnose.UnitPerSec, st.Span)}
			fd.Explain = plain("The engine recomputes every prompt from the first token. When requests share a beginning (a system prompt, earlier chat turns, a RAG preamble), the prefix cache would skip that prefill.")
			fc := diagnose.FlagChange{Flag: "--enable-prefix-caching", From: diagnose.Str("off"), To: diagnose.Str("on")}
			why := "cache_config_info says enable_prefix_caching=False"
			switch u.ep.Version.Gen {
			case sources.GenV1:
				why = "cache_config_info says enable_prefix_caching=False; V1 enables it by default for models that support it, so this deployment passes --no-enable-prefix-caching: remove it (or pass --enable-prefix-caching)"
			case sources.GenV0:
				why = "cache_config_info says enable_prefix_caching=False, V0's default: pass --enable-prefix-caching"
			}
			fc.Why = plain(why)
			fd.Flags = []diagnose.FlagChange{fc}
			fd.Action = plain("if prompts share prefixes, turn prefix caching on (" + why[strings.LastIndex(why, ": ")+2:] + ")")
			return
		}
		at, was := prefixFell(u)
		fd.Summary = say("prefix-cache hit %s of %s prompt tokens/s, caching on", pct(st.PrefixHitRatio), num(st.PromptTokRate))
		if at.IsZero() {
			fd.Summary = say("prefix-cache hit %s of %s prompt tokens/s, caching on, never seen matching", pct(st.PrefixHitRatio), num(st.PromptTokRate))
		}
		fd.Evidence = []diagnose.Evidence{evNum("hit ratio", st.PrefixHitRatio, diagnose.UnitRatio, st.Span), evNum("prompt tokens", st.PromptTokRate, diagnose.UnitPerSec, st.Span),
			evQ("TTFT p95", &st.TTFT, st.TTFT.P95, st.Span)}
		if !bad(st.PrefixQueryRate) {
			fd.Evidence = append(fd.Evidence, evNum("cache queries", st.PrefixQueryRate, diagnose.UnitTokPerSec, st.Span))
		}
		if m := matchedPerRequest(st); !bad(m) {
			fd.Evidence = append(fd.Evidence, evNum("matched per request", m, diagnose.UnitTokens, st.Span))
		}
		if at.IsZero() {
			// Nothing says these prompts ever shared a prefix: a question
			// for the operator, not a fault (a P/D decode instance of
			// unique documents, a benchmark harness read the same).
			fd.Explain = plain("Prefix caching is on and almost nothing matches, and vtop has not seen it match on this endpoint. Prompts that share no prefix (unique documents, a benchmark, the decode side of a prefill/decode pair) read exactly like a shared prefix broken at its top (a request id, a timestamp), and no counter tells them apart.")
			fd.Action = plain("if these prompts should share a prefix (a system prompt, earlier chat turns), check that it is byte-identical and first in each; if they share none, nothing to do")
			return
		}
		fd.Evidence = append(fd.Evidence, evNum("hit ratio when it matched", was, diagnose.UnitRatio, 0), ev("matched until", clock(at), 0))
		fd.Explain = plain("Prefix caching is on and matched before, but almost no prompt now begins with blocks already in the cache, so every prefill is computed in full. The cache matches whole blocks from the first token: one changing byte near the top (a request id, a timestamp) defeats it for the rest of the prompt.")
		fd.Action = say("find what changed in the prompts at %s (it matched %s before): keep shared system prompts byte-identical and at the very start (move ids and timestamps after them); send requests with the same prefix to the same replica", clock(at), pct(was))
	},
	prom: func(g *promGen, p []float64) []promAlert {
		hits := g.rate(sources.CPrefixHits, byEngine)
		q := g.rate(sources.CPrefixQueries, byEngine)
		prompt := g.rate(sources.CPromptTokens, byEngine)
		base := fmt.Sprintf("(%s) / (%s) < %s and %s >= %s and %s * %s >= %s",
			hits, q, g.num(p[pcHitLow]), prompt, g.num(p[pcMinPrompt]), prompt, g.num(g.rangeSeconds()), g.num(p[pcMinTokens]))
		// A warning once the cache matched within the hour: the
		// nearest a rule without state gets to "seen matching".
		seen := fmt.Sprintf("max_over_time(((%s) / (%s))[1h:1m]) >= %s", hits, q, g.num(p[pcHitClear]))
		return []promAlert{{Severity: "info", Expr: base}, {Severity: "warning", Expr: base + " and " + seen}}
	},
}

// endpointGPUMem sums the used and total memory of the GPUs the endpoint's
// processes are on (used by anyone: OOM is about the device); NaN without
// a GPU join.
func endpointGPUMem(f *diagnose.Frame, ep *diagnose.EndpointView) (used, total float64) {
	used, total = math.NaN(), math.NaN()
	if len(ep.GPU.GPUs) == 0 || ep.GPU.Stale {
		return
	}
	used, total = 0, 0
	for _, gi := range ep.GPU.GPUs {
		if gi < 0 || gi >= len(f.GPU.GPUs) {
			return math.NaN(), math.NaN()
		}
		g := &f.GPU.GPUs[gi]
		// A lost GPU (or one whose memory cannot be read) makes the sum
		// unknown, not smaller.
		used += g.MemUsed
		total += g.MemTotal
	}
	if bad(used) || bad(total) {
		return math.NaN(), math.NaN()
	}
	return used, total
}
