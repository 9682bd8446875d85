package detect

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// Which limit binds. For an endpoint with a symptom (requests waiting,
// latency over target) classify names the engine limit that holds the work
// back from the evidence, each limit tested by the mechanism that makes it
// bind in vLLM's scheduler, or says that none does (a burst that drains,
// too few observations) or that none explains it (unexplained). The advice
// of every rule follows it: a flag that cannot move the binding limit is
// never recommended.
//
// The thresholds are the mechanism's, not tunables: a plateau is running
// within flatRun of one value over the window while requests waited the
// whole time; KV is full at kvFull (vLLM preempts near 100 %, and the
// scheduler's watermark keeps ~1 % free).
const (
	minPoints    = 10   // sparkline points a verdict needs (≈10 s at 1 s polls)
	minObs       = 20   // latency observations before a percentile counts
	kvFull       = 0.90 // KV usage at which the cache binds
	kvNear       = 0.80 // KV usage at which a cache that preempted in the window still binds
	flatRun      = 0.03 // a plateau: running varies by at most this share (or one sequence)
	busyGPU      = 90   // GPU utilization (percent) at which compute binds
	prefillHeavy = 0.7  // prompt share of the tokens that makes steps prefill-heavy
	// draftCost is what one drafted token costs relative to a decode step
	// of the target model (drafting plus verifying the longer sequence):
	// drafts pay for themselves only when more than this share is accepted.
	draftCost = 0.25
	// growing is the queue growth (requests/s) that says arrivals outrun
	// completions, as queue_backlog's default.
	growing = 0.05
	// burstFor bounds how long a burst keeps requests waiting without a
	// break: a queue standing longer is not draining (a new incident
	// leaves the burst verdict after it).
	burstFor = 10 * time.Second
	// givenUp is the share of finished requests aborted from which
	// clients are abandoning the queue rather than cancelling a few
	// answers (a stop button, a closed tab abort a few percent).
	givenUp = 0.5
	// patience is the queue time past which clients give up: common
	// HTTP client and gateway timeouts are 30 s to a few minutes.
	patience = 30 * time.Second
	// xferLossShare is the share of requests whose KV transfer failed or
	// expired from which the transfer binds: each such request is
	// recomputed here (or lost), so a few percent already cost more
	// prefill than a decode instance is sized for.
	xferLossShare = 0.05
	// saturatingStep is the step size (tokens) from which a step is
	// compute-bound on a datacenter GPU: below it a larger token budget
	// adds prefill throughput almost for free, above it only longer steps.
	saturatingStep = 2048
)

// verdictMemo is what the next evaluation needs of an endpoint's verdict.
type verdictMemo struct {
	limit, under diagnose.Limit
	paceOver     bool
	replicas     int     // the replicas shown
	replicasAt   float64 // the unrounded count they were computed from
	signals, of  int     // the signals shown
	signalsAt    time.Time
	throttled    bool
	loraFlag     *diagnose.FlagChange // the --max-loras shown, and when it was computed
	loraAt       time.Time
	paceAt       time.Time            // when the pace was last read over target
	capFlag      *diagnose.FlagChange // the raise of the cap under arrivals, its gain, and when
	capGain      float64
	capAt        time.Time
	served       float64 // what the replica served at its limit before its clients gave up, and when
	servedAt     time.Time
	gaveUp       float64 // the shares the line shows (see shareHold)
	refused      float64
}

// shareHold is how far a share the verdict line says (clients giving up
// in the queue, requests refused) moves before the line shows the new
// one: the abort share of a standing queue climbed a point or two every
// few seconds, and the line read "66 %", "68 %", "70 %" by turns while
// nothing else moved.
const shareHold = 0.1

// servedMemory is how long what a replica served at its limit sizes its
// pool once its clients give up in the queue (aborted requests deflate
// what it serves, not what it could).
const servedMemory = 10 * time.Minute

// signalHold is how long a verdict's count of agreeing signals is shown at
// its highest while the limit stays: one signal is a gauge read at the
// scrape (requests waiting for KV capacity, the queue at this instant),
// and a cache thrashing all along read "3 of 4" and "2 of 4" by turns,
// six times in fifteen seconds.
const signalHold = 30 * time.Second

// memo is what the next evaluation keeps of v, shown at now.
func memo(v *diagnose.Verdict, now time.Time) verdictMemo {
	return verdictMemo{limit: v.Limit, under: v.Under, paceOver: v.PaceOver, replicas: v.Replicas, replicasAt: v.ReplicasAt,
		signals: v.Signals, of: v.Of, signalsAt: now, throttled: v.Throttled}
}

// holdShown keeps what v's line shows from moving with one scrape's
// reading while the same limit binds, for signalHold: the count of
// agreeing signals at its highest, a quiet line's slow pace, the batch
// cap's raise under arrivals, the adapter slots advised at their most.
// It returns what the next evaluation keeps.
func holdShown(v *diagnose.Verdict, prev verdictMemo, now time.Time) verdictMemo {
	m := memo(v, now)
	if v.GaveUp > 0 && prev.limit == v.Limit && prev.gaveUp > 0 && math.Abs(v.GaveUp-prev.gaveUp) < shareHold {
		v.GaveUp = prev.gaveUp
	}
	if v.Refused > 0 && prev.limit == v.Limit && prev.refused > 0 && math.Abs(v.Refused-prev.refused) < shareHold {
		v.Refused = prev.refused
	}
	m.gaveUp, m.refused = v.GaveUp, v.Refused
	switch {
	case v.Served > 0 && v.GaveUp == 0 && !(prev.served > v.Served && now.Sub(prev.servedAt) < servedMemory):
		m.served, m.servedAt = v.Served, now
	case prev.served > 0 && now.Sub(prev.servedAt) < servedMemory:
		m.served, m.servedAt = prev.served, prev.servedAt
	}
	// A slow pace on a quiet verdict is said for signalHold after it was
	// last read: bursts move the inter-token p95 about the target, and a
	// 14B's line gained and lost "but tokens stream slower than target"
	// 8 times in 20 s.
	quiet := v.Limit == diagnose.LimitHealthy || v.Limit == diagnose.LimitBurst
	switch {
	case v.PaceOver:
		m.paceAt = now
	case quiet && prev.paceOver && now.Sub(prev.paceAt) < signalHold:
		v.PaceOver, m.paceOver, m.paceAt = true, true, prev.paceAt
	}
	if v.Limit == prev.limit && v.Under == prev.under && v.Of == prev.of && v.Signals < prev.signals && now.Sub(prev.signalsAt) < signalHold {
		v.Signals = prev.signals
		m.signals, m.signalsAt = prev.signals, prev.signalsAt
	}
	// The raise of the batch cap said as the smaller part under arrivals
	// is said while the same limits bind, for signalHold after it was
	// last computed: whether the cache fits more than today's cap moves
	// with the window's mean sequence, and a V0 8B's line gained and lost
	// "--max-num-seqs 256 → 280 adds 9.4%" 6 times in 20 s.
	if v.Limit == diagnose.LimitArrivals && v.Under == diagnose.LimitBatchCap {
		switch {
		case v.Flag != nil:
			m.capFlag, m.capGain, m.capAt = v.Flag, v.Gain, now
		case prev.limit == v.Limit && prev.under == v.Under && prev.capFlag != nil && now.Sub(prev.capAt) < signalHold:
			v.Flag, v.Gain = prev.capFlag, prev.capGain
			m.capFlag, m.capGain, m.capAt = prev.capFlag, prev.capGain, prev.capAt
		}
	}
	// The adapter slots advised are a slot for each adapter waiting, a
	// gauge that moves by one as requests come and go: shown at the most
	// of the last signalHold, as the signals are (two data-parallel
	// engines read "--max-loras 2 → 3" and "→ 4" by turns, 13 times in
	// four minutes).
	if v.Limit != diagnose.LimitLoRASlots || v.Flag == nil || !v.Flag.To.Numeric() {
		return m
	}
	if p := prev.loraFlag; prev.limit == v.Limit && p != nil && p.To.Num > v.Flag.To.Num && now.Sub(prev.loraAt) < signalHold {
		fc := *p
		fc.Why = p.Why.Add("; the most of the last %s (now %s)", dur(signalHold), v.Flag.To)
		v.Flag = &fc
		m.loraFlag, m.loraAt = p, prev.loraAt
		return m
	}
	fc := *v.Flag
	m.loraFlag, m.loraAt = &fc, now
	return m
}

// classify is the verdict on one endpoint; prev is its previous one.
func classify(x *evalCtx, ep *diagnose.EndpointView, prev verdictMemo) diagnose.Verdict {
	st, tr := &ep.Stats, &ep.Trend
	switch {
	case !upEngine(ep):
		return diagnose.Verdict{}
	case resting(st):
		return diagnose.Verdict{Limit: diagnose.LimitAsleep, Signals: 1, Of: 1}
	}
	if c, n := stalledSignals(x, ep); c {
		return diagnose.Verdict{Limit: diagnose.LimitStalled, Signals: n, Of: 2,
			Evidence: []diagnose.Evidence{evNum("running", st.Running, diagnose.UnitCount, 0), evNum("waiting", st.Waiting, diagnose.UnitCount, 0),
				evNum("generation", st.GenTokRate, diagnose.UnitTokPerSec, st.Span)}}
	}
	if stalledThroughout(x, ep) {
		// Requests held and not a token since the first point seen, for
		// less than a stall takes to call: no other limit explains an
		// engine that makes no progress, so none is named yet (opened on
		// a stalled engine, the first ten seconds said "unexplained").
		return diagnose.Verdict{Limit: diagnose.LimitFewData, Evidence: []diagnose.Evidence{evNum("points", float64(len(ep.Spark)), diagnose.UnitCount, 0)}}
	}
	// Requests the API server refuses never reach the engine: its queue
	// and latency can look healthy, or a burst it drained, while a third
	// of the clients fail. The refusals come first.
	if r, ok := refusalOf(st); ok && r.refusing() && tr.Points >= minPoints {
		return rejectingVerdict(st, &r)
	}
	if !bad(st.RejectRate) && st.RejectRate > 0 {
		return diagnose.Verdict{Limit: diagnose.LimitRejecting, Signals: 1, Of: 1,
			Evidence: []diagnose.Evidence{evNum("rejected", st.RejectRate, diagnose.UnitPerSec, st.Span)}}
	}
	queued := !bad(st.Waiting) && st.Waiting >= 1 || !bad(tr.WaitMean) && tr.WaitMean >= 1
	// Once a limit is named for latency over target, it stays named
	// while the latency stays within a fifth of it: a 14B computing
	// every prompt in full read TTFT p95 about the 500 ms target, and the
	// verdict went from "compute" to "nothing waits, latency within
	// target" and back 10 times in 30 s.
	ttftT, itlT := x.slo.TTFT, x.slo.ITL
	if prev.limit.Symptom() {
		ttftT, itlT = ttftT*4/5, itlT*4/5
	}
	slow := over(&st.TTFT, ttftT, 0.95) || over(&st.ITL, itlT, 0.5)
	// Failed or expired KV transfers are a symptom of their own: each
	// such request is recomputed here or lost, whether or not a queue
	// stands at this instant (a decode instance losing 40 % of its reads
	// read as healthy whenever its queue was empty for a scrape).
	_, _, losing := xferLoss(st)
	// Drafts accepted too rarely make every decode step slower (k drafts
	// and a longer verification for about one kept token), queue or not:
	// with the pace over the SLO's inter-token target (its p95), they are
	// what binds it (two data-parallel engines sharing a load had no
	// queue, inter-token p95 65 ms over 50 ms at 2 % accepted, and read
	// "nothing waits, latency within target").
	// Once said, a slow pace stays said while the inter-token p95 stays
	// within a fifth of the target (at 2 % of drafts accepted the p95
	// hovered about 50 ms, and the verdict flipped 23 times in four
	// minutes).
	pace := x.slo.ITL
	if prev.limit == diagnose.LimitSpecDecode || prev.paceOver || prev.throttled {
		pace = pace * 4 / 5
	}
	// Judged from the verdict's points on, as the SLO breach is: the
	// first second's histogram is a step or two (a busy 14B read "tokens
	// stream slower than target" at 2 s and "within target" at 3 s).
	slowPace := over(&st.ITL, pace, 0.95)
	paceOver := slowPace && tr.Points >= minPoints
	draftsSlow := paceOver && wastedDrafts(st)
	// A GPU slowed by heat or its hardware makes every step slower, queue
	// or not: with the pace over target it is what binds (a V0 8B past its
	// slowdown temperature read "unexplained" and "a burst the engine
	// drained, but tokens stream slower" by turns, 15 times in 4 minutes).
	gpuSlow := paceOver && slowedGPU(x, ep)
	if !queued && !slow && !losing && !draftsSlow && !gpuSlow {
		if (bad(st.ReqRate) || st.ReqRate == 0) && (bad(st.Running) || st.Running == 0) {
			return diagnose.Verdict{Limit: diagnose.LimitIdle}
		}
		// "Latency within target" would be untrue while the pace is over
		// it (a thermally throttled 14B: inter-token p95 90 ms against
		// 50 ms, nothing waiting); in the first seconds it is not known,
		// and once said so it stays unknown until the points are there
		// (a 14B's first seconds' p95 crossed the target by turns: "too
		// few observations" and "latency within target" alternated four
		// times in eight seconds).
		if !paceOver && (slowPace || prev.limit == diagnose.LimitFewData && tr.Points < minPoints) {
			return diagnose.Verdict{Limit: diagnose.LimitFewData, Evidence: []diagnose.Evidence{evNum("points", float64(tr.Points), diagnose.UnitCount, tr.Span)}}
		}
		return diagnose.Verdict{Limit: diagnose.LimitHealthy, PaceOver: paceOver, Drained: drainedBurst(tr)}
	}
	if tr.Points < minPoints {
		// Adapters listed waiting while every --max-loras slot is taken
		// is the mechanism itself, in gauges: one scrape shows it.
		if l := ep.Lora; l != nil && len(l.Running) >= l.MaxLora {
			_, room := kvState(st)
			if v, ok := loraSlots(st, l, room); ok {
				return v
			}
		}
		return diagnose.Verdict{Limit: diagnose.LimitFewData, Evidence: []diagnose.Evidence{evNum("points", float64(tr.Points), diagnose.UnitCount, tr.Span)}}
	}
	if drainedBurst(tr) && !(st.PreemptionsRate > 0) && !losing && !draftsSlow && !gpuSlow && !steadyWait(x, ep) {
		// The queue emptied within the window and whatever waits now has
		// waited less than a burst lasts: a burst the engine drains; no
		// limit binds.
		return diagnose.Verdict{Limit: diagnose.LimitBurst, PaceOver: paceOver, Evidence: []diagnose.Evidence{
			evNum("waiting without a break", tr.WaitFor.Seconds(), diagnose.UnitSeconds, 0), evNum("most waiting", tr.WaitMax, diagnose.UnitCount, tr.Span),
			evNum("waiting", st.Waiting, diagnose.UnitCount, 0)}}
	}
	v := bindingLimit(x, ep, prev)
	switch {
	case givingUp(st, tr) && capacityUnder(&v, st):
		// Most requests it finishes are aborted by clients that waited
		// in a queue standing the whole window: arrivals are past what
		// the engine serves by more than its completions can size (it
		// serves almost none), whatever limit binds under it.
		v.Under, v.Limit, v.GaveUp = v.Limit, diagnose.LimitArrivals, st.AbortShare
		v.Flag, v.Gain, v.Ruled = nil, math.NaN(), nil
		// Aborts, a queue standing all window, its time past patience,
		// and, when it holds, the queue still growing.
		v.Signals, v.Of = 3, 4
		if !bad(tr.WaitSlope) && tr.WaitSlope >= growing {
			v.Signals++
		}
		v.Evidence = append(v.Evidence, evNum("aborted", st.AbortShare, diagnose.UnitRatio, st.Span), evQ("queue time p95", &st.Queue, st.Queue.P95, st.Span),
			evNum("finished", st.ReqRate, diagnose.UnitReqPerSec, st.Span), evNum("fewest waiting", tr.WaitMin, diagnose.UnitCount, tr.Span))
		routedGivingUp(x, ep, &v, prev)
	case v.Limit.Symptom() && v.Limit != diagnose.LimitUnexplained:
		arrivals(x, ep, &v, prev)
	}
	return v
}

// capacityUnder reports whether the limit under a queue clients abandon
// is capacity (the batch, the token budget, the GPU, a cache full of
// useful work) or none found: then arrivals are the headline. A limit
// that wastes or withholds capacity (a thrashing cache, LoRA slots,
// drafts, KV transfers, a stall) stays the verdict: fixing it is the
// lever, and the aborts follow from it.
func capacityUnder(v *diagnose.Verdict, st *diagnose.Stats) bool {
	switch v.Limit {
	case diagnose.LimitCompute:
		return !v.Throttled // a throttled GPU withholds capacity: its cooling is the lever
	case diagnose.LimitBatchCap, diagnose.LimitTokenBudget, diagnose.LimitUnexplained:
		return true
	case diagnose.LimitKVCache:
		return !bad(st.PreemptionsRate) && st.PreemptionsRate <= 0.05*served(st)
	}
	return false
}

// givingUp reports clients abandoning a standing queue: most finished
// requests aborted (givenUp) while requests waited the whole window and
// the queue time p95 is past what a client waits for a first token
// (patience). A queue that long makes the FCFS scheduler admit the
// oldest requests, whose clients are about to leave: the engine computes
// prefills nobody reads and serves almost nothing (congestion collapse,
// worse with client retries). Needs aborts counted (vLLM's
// finished_reason="abort"); unknown, it never holds.
func givingUp(st *diagnose.Stats, tr *diagnose.Trend) bool {
	return !bad(st.AbortShare) && st.AbortShare >= givenUp && !bad(tr.WaitMin) && tr.WaitMin >= 1 &&
		st.Queue.Count >= minObs && !bad(st.Queue.P95) && st.Queue.P95 >= patience.Seconds()
}

// steadyWait: at nearly every point of the window, requests waited in
// the queue longer than the SLO's whole TTFT target, though the queue
// emptied in between. A burst queues requests behind one another and is
// drained: its waits are long only around it. Waits long at every point,
// with nobody ahead of them, are a hold outside the engine's capacity (a
// remote prefill's KV that does not arrive; vLLM before 0.11.1 exports no
// NIXL counters), not a burst.
func steadyWait(x *evalCtx, ep *diagnose.EndpointView) bool {
	from := x.f.Time.Add(-x.f.Window).UnixMilli()
	known, long := 0, 0
	for i := range ep.Spark {
		p := &ep.Spark[i]
		if p.UnixMilli < from {
			continue
		}
		q := float64(p.V[diagnose.SpQueue])
		if math.IsNaN(q) {
			continue
		}
		known++
		if q > x.slo.TTFT.Seconds() {
			long++
		}
	}
	return known >= minPoints && float64(long) >= steadyShare*float64(known)
}

// steadyShare is the share of a window's points whose queue wait must be
// long for the wait to be steady rather than a burst's.
const steadyShare = 0.9

// over reports a percentile known over enough observations and above
// target.
func over(q *diagnose.Quantiles, target time.Duration, p float64) bool {
	v := q.P95
	if p == 0.5 {
		v = q.P50
	}
	return !bad(v) && q.Count >= minObs && v > target.Seconds()
}

// stalledThroughout: requests held and not a token produced at any point
// seen so far (the stall reaches back to the first point with rates), not
// yet for as long as stalledSignals asks.
func stalledThroughout(x *evalCtx, ep *diagnose.EndpointView) bool {
	since, c := stalledSince(x, ep)
	if c != condMet {
		return false
	}
	for i := range ep.Spark {
		if pt := &ep.Spark[i]; pt.Time().Equal(since) {
			if i == 0 {
				return true
			}
			v := &ep.Spark[i-1].V
			return bad(float64(v[diagnose.SpGenTok])) || bad(float64(v[diagnose.SpReq])) || bad(float64(v[diagnose.SpRunning])) || bad(float64(v[diagnose.SpWaiting]))
		}
	}
	return false
}

// stalledSignals: requests held and not a token produced over the window.
func stalledSignals(x *evalCtx, ep *diagnose.EndpointView) (bool, int) {
	since, c := stalledSince(x, ep)
	if c != condMet || x.now.Sub(since) < 10*time.Second {
		return false, 0
	}
	return true, 2
}

// bindingLimit tests each limit by its mechanism, in the order that one
// masks the next (adapters waiting for a slot keep the batch small; a full
// cache preempts whatever the batch cap says), and returns the first that
// holds, with how many independent signals agree.
func bindingLimit(x *evalCtx, ep *diagnose.EndpointView, prev verdictMemo) diagnose.Verdict {
	st, tr := &ep.Stats, &ep.Trend
	w := st.Span
	var ruled []diagnose.Limit
	kvBound, kvRoom := kvState(st)
	if !kvBound && (prev.limit == diagnose.LimitKVCache || prev.under == diagnose.LimitKVCache) &&
		(st.PreemptionsRate > 0 || !bad(st.KVUsage) && st.KVUsage >= kvNear) {
		// Once named, the cache binds while it still preempts within the
		// window (a preemption is a step that found it full) or stays
		// near full. Clients giving up in its queue free blocks as their
		// requests end (a 14B with prompts ×8 read 98 %, 74 %, 82 %,
		// 75 % in half a minute, still preempting 0.4/s), and a long
		// request's end frees its blocks for a scrape before the next
		// admission fills them (V0: 98 %, 86 %, 98 %): the verdict
		// flipped between the cache, "unexplained" and "clients give up"
		// 5 times in 30 s.
		kvBound, kvRoom = true, false
	}
	plat, flat := plateau(ep)
	// Running at the configured cap with requests waiting is the cap
	// binding at this scrape, before the plateau has its points (a queue
	// that formed seconds ago read "compute: batch has room" at 256 of 256).
	atCap := ep.MaxNumSeqs > 0 && !bad(st.Running) && !bad(st.Waiting) && st.Waiting >= 1 &&
		st.Running >= (1-flatRun)*float64(ep.MaxNumSeqs*max(1, st.Engines))

	// KV transfer (P/D disaggregation): the decode instance reads each
	// prompt's KV from its prefill instance; a read that fails (or whose
	// KV the prefill side let expire) is recomputed here, after the
	// transfer's timeout, or the request is lost. It comes first: the
	// recomputed prefills fill the token budget and the GPU, which would
	// else read as those limits.
	if _, share, ok := xferLoss(st); ok {
		n := 1
		if over(&st.TTFT, x.slo.TTFT, 0.95) {
			n++
		}
		if !bad(st.WaitingDeferred) && st.WaitingDeferred > 0 {
			n++ // requests wait for their KV to arrive
		}
		return diagnose.Verdict{Limit: diagnose.LimitKVTransfer, Signals: n, Of: 3, Evidence: []diagnose.Evidence{
			evNum("failed KV transfers", st.KVXferFailRate, diagnose.UnitPerSec, w), evNum("expired KV", st.KVExpiredRate, diagnose.UnitPerSec, w),
			evNum("of finished requests", share, diagnose.UnitRatio, w),
			evQ("TTFT p95", &st.TTFT, st.TTFT.P95, w), evNum("waiting (deferred)", st.WaitingDeferred, diagnose.UnitCount, 0)}}
	}
	if !bad(st.KVXferFailRate) || !bad(st.KVExpiredRate) {
		ruled = append(ruled, diagnose.LimitKVTransfer) // only where a connector's counters say so
	}

	if v, ok := loraSlots(st, ep.Lora, kvRoom); ok {
		return v
	}
	// Once named, the slots bind while requests waited within the
	// window, though one scrape lists no adapter waiting (the queue of
	// one adapter's requests drained for a moment: two engines read
	// "unexplained" for two seconds between minutes of LoRA slots; the
	// waits the window's latency holds were the slots').
	if l := ep.Lora; prev.limit == diagnose.LimitLoRASlots && l != nil && l.MaxLora > 0 && !bad(tr.WaitMean) && tr.WaitMean >= 1 {
		return diagnose.Verdict{Limit: diagnose.LimitLoRASlots, Signals: 1, Of: 4,
			Flag: &diagnose.FlagChange{Flag: "--max-loras", From: intv(l.MaxLora), To: intv(l.MaxLora),
				Why: say("no adapter waits at this scrape (%d running, --max-loras %d); requests waited for slots within the window", len(l.Running), l.MaxLora)},
			Evidence: []diagnose.Evidence{evNum("adapters waiting", 0, diagnose.UnitCount, 0), evNum("adapters running", float64(len(l.Running)), diagnose.UnitCount, 0),
				evNum("max_loras", float64(l.MaxLora), diagnose.UnitCount, 0), evNum("waiting", st.Waiting, diagnose.UnitCount, 0)}}
	}
	ruled = append(ruled, diagnose.LimitLoRASlots)

	// Speculative decoding: each step verifies k drafted tokens; when few
	// are accepted the drafts cost more than they save, and the slower
	// decode holds every sequence longer (so it comes before the KV cache
	// it fills).
	if wastedDrafts(st) {
		acc, k := specAcceptance(st)
		n := 1
		if over(&st.ITL, x.slo.ITL, 0.5) || over(&st.TPOT, x.slo.ITL, 0.5) || over(&st.ITL, x.slo.ITL, 0.95) {
			n++
		}
		if k >= 2 {
			n++
		}
		fc := specFlag(acc, k)
		return diagnose.Verdict{Limit: diagnose.LimitSpecDecode, Signals: n, Of: 3, Flag: fc, Evidence: []diagnose.Evidence{
			evNum("acceptance", acc, diagnose.UnitRatio, w), evNum("tokens drafted per step", k, diagnose.UnitNumber, w),
			evQ("inter-token p50", &st.ITL, st.ITL.P50, w), evQ("inter-token p95", &st.ITL, st.ITL.P95, w)}}
	}
	ruled = append(ruled, diagnose.LimitSpecDecode)

	// KV cache: usage pinned; the scheduler preempts or stops admitting.
	if kvBound {
		n := 1
		if st.PreemptionsRate > 0 {
			n++
		}
		if !bad(st.WaitingCapacity) && st.WaitingCapacity > 0 {
			n++
		}
		if !bad(tr.WaitMin) && tr.WaitMin >= 1 {
			n++
		}
		return diagnose.Verdict{Limit: diagnose.LimitKVCache, Signals: n, Of: 4, Evidence: []diagnose.Evidence{
			evNum("KV usage", st.KVUsage, diagnose.UnitRatio, 0), evNum("preemptions", st.PreemptionsRate, diagnose.UnitPerSec, w),
			evNum("waiting", st.Waiting, diagnose.UnitCount, 0)}}
	}
	ruled = append(ruled, diagnose.LimitKVCache)

	// The batch cap: running flat at one value with requests waiting the
	// whole window and the KV cache with room; the plateau is the current
	// --max-num-seqs.
	if (flat || atCap) && kvRoom {
		n := 3 // plateau, waiting throughout, KV room
		if !flat {
			n = 1 // KV room
			plat = batchPlateau{per: st.Running / float64(max(1, st.Engines)), waitMin: st.Waiting}
		}
		if ep.MaxNumSeqs > 0 && plat.per >= float64(ep.MaxNumSeqs)*0.95 {
			n++
		}
		if !bad(st.WaitingCapacity) && st.WaitingCapacity > 0 {
			n++
		}
		return diagnose.Verdict{Limit: diagnose.LimitBatchCap, Signals: n, Of: 5, Evidence: []diagnose.Evidence{
			evNum("running plateau", plat.per, diagnose.UnitCount, plat.span), evNum("fewest waiting", plat.waitMin, diagnose.UnitCount, plat.span),
			evNum("KV usage", st.KVUsage, diagnose.UnitRatio, 0)}}
	}
	ruled = append(ruled, diagnose.LimitBatchCap)

	// The token budget: each step carries at most --max-num-batched-tokens;
	// pinned there by long prompts, steps sit in the top bucket.
	ceil, pinned := stepCeiling(&st.IterTokens)
	if pinned && kvRoom && ceil <= saturatingStep {
		n := 2 // steps at a ceiling, KV room
		tot := st.PromptTokRate + st.GenTokRate
		if !bad(tot) && tot > 0 && st.PromptTokRate/tot >= prefillHeavy {
			n++
		}
		if !flat {
			n++
		}
		if n >= 3 {
			budget, rounding := roundTokens(2 * ceil)
			return diagnose.Verdict{Limit: diagnose.LimitTokenBudget, Signals: n, Of: 4,
				Flag: &diagnose.FlagChange{Flag: "--max-num-batched-tokens", From: words(say("≈%s", grouped(ceil))), To: grouped(float64(budget)), Exact: 2 * ceil,
					Why: say("steps sit at ≈%s tokens (p50 %s, p95 %s) with a prefill-heavy mix; twice the budget (2 × %s = %s, %s) admits twice the prompt tokens a step, at the cost of longer steps for the running decodes",
						grouped(ceil), grouped(st.IterTokens.P50), grouped(st.IterTokens.P95), grouped(ceil), grouped(2*ceil), rounding)},
				Evidence: []diagnose.Evidence{evNum("step tokens p50", st.IterTokens.P50, diagnose.UnitTokens, w), evNum("step tokens p95", st.IterTokens.P95, diagnose.UnitTokens, w),
					evNum("prompt tokens", st.PromptTokRate, diagnose.UnitTokPerSec, w), evNum("generation", st.GenTokRate, diagnose.UnitTokPerSec, w),
					evNum("mean prompt", st.AvgPromptLen, diagnose.UnitTokens, w)}}
		}
	}
	ruled = append(ruled, diagnose.LimitTokenBudget)

	// Compute: batch and KV have room, and the GPU is busy or every step
	// is already compute-bound (pinned above saturatingStep tokens).
	util := endpointGPUUtil(x.f, ep, x.f.Window)
	busy := !bad(util) && util >= busyGPU
	throttled := slowedGPU(x, ep) // every step slower, prefills too: the waits are its own
	// A slow step lengthens every request; it holds none in the queue
	// (with batch, KV and budget room the scheduler admits a waiting
	// request at the next step): steady waits with steps within target
	// are not compute's.
	held := steadyWait(x, ep) && !over(&st.ITL, x.slo.ITL, 0.5) && !throttled
	if kvRoom && !flat && !atCap && !held && (busy || throttled || pinned && ceil > saturatingStep) {
		n := 2 // KV room, batch below a cap
		if busy || throttled {
			n++
		}
		if pinned && ceil > saturatingStep {
			n++
		}
		if over(&st.ITL, x.slo.ITL, 0.5) {
			n++
		}
		v := diagnose.Verdict{Limit: diagnose.LimitCompute, Signals: n, Of: 5, Throttled: throttled, Evidence: []diagnose.Evidence{
			evNum("GPU utilization", util/100, diagnose.UnitRatio, x.f.Window), evNum("step tokens p95", st.IterTokens.P95, diagnose.UnitTokens, w), evNum("KV usage", st.KVUsage, diagnose.UnitRatio, 0),
			evNum("mean running", tr.RunMean, diagnose.UnitCount, tr.Span), evQ("inter-token p50", &st.ITL, st.ITL.P50, w)}}
		if throttled {
			v.Evidence = append(v.Evidence, evNum("readings slowed by heat or hardware", slowedShare(x, ep), diagnose.UnitRatio, x.f.Window))
		}
		return v
	}
	if !bad(util) || pinned && ceil > saturatingStep {
		// Ruled out only where measured: without the endpoint's GPUs
		// (dcgm GPUs joined by a host several replicas share) nothing
		// says the GPU is not saturated (a 10× queue on two engines read
		// "ruled out: … compute" and "adding replicas will not help").
		ruled = append(ruled, diagnose.LimitCompute)
	}
	return diagnose.Verdict{Limit: diagnose.LimitUnexplained, Ruled: ruled, Evidence: []diagnose.Evidence{
		evNum("waiting", st.Waiting, diagnose.UnitCount, 0), evNum("running", st.Running, diagnose.UnitCount, 0),
		evNum("KV usage", st.KVUsage, diagnose.UnitRatio, 0), evQ("TTFT p95", &st.TTFT, st.TTFT.P95, w), evQ("inter-token p50", &st.ITL, st.ITL.P50, w),
		evNum("GPU utilization", util/100, diagnose.UnitRatio, x.f.Window)}}
}

// slowedGPU: most readings of the endpoint's own GPUs over the window show
// a thermal or hardware slowdown (a power cap alone is a busy GPU's normal
// life: it is not counted).
func slowedGPU(x *evalCtx, ep *diagnose.EndpointView) bool {
	return slowedShare(x, ep) >= 0.5
}

// slowedShare is the share of the window's readings of the endpoint's
// GPUs slowed by heat or hardware (0 without readings).
func slowedShare(x *evalCtx, ep *diagnose.EndpointView) float64 {
	if len(ep.GPU.GPUs) == 0 || ep.GPU.Stale {
		return 0
	}
	n, slowed := 0, 0
	for _, p := range diagnose.GPUWindow(ep.GPU.Hist, x.f.Time, x.f.Window) {
		if p.Lost {
			continue
		}
		n++
		if p.ClockEvents&(sources.ClockThermal|sources.ClockHardware) != 0 {
			slowed++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(slowed) / float64(n)
}

// wastedDrafts: drafts are accepted less often than a draft costs.
func wastedDrafts(st *diagnose.Stats) bool {
	acc, _ := specAcceptance(st)
	return !bad(acc) && acc < draftCost
}

// specFlag is the drafts' flag change at acceptance acc of k drafted
// tokens a step (k NaN: unknown).
func specFlag(acc, k float64) *diagnose.FlagChange {
	var from diagnose.Value
	if !bad(k) {
		from = dec(k, 1)
	}
	return &diagnose.FlagChange{Flag: "--speculative-config num_speculative_tokens", From: from, To: specTokens(acc, k),
		Why: say("accepted %s of drafted tokens; a draft pays for itself above about %s%s", pct(acc), pct(draftCost), specTokensWhy(acc, k))}
}

// kvState says whether the KV cache binds, and whether it has room (known
// and not binding). vLLM preempts only when a running sequence cannot get
// a block: a cache that preempted within the window and still sits near
// full has bound, though the blocks the preempted sequences freed read
// below kvFull now (a thrashing cache swung between the KV verdict and
// compute around 90 %).
func kvState(st *diagnose.Stats) (bound, room bool) {
	if bad(st.KVUsage) {
		return false, false
	}
	bound = st.KVUsage >= kvFull || !bad(st.KVUsageMax) && st.KVUsageMax >= kvFull+0.05 ||
		st.PreemptionsRate > 0 && st.KVUsage >= kvNear
	return bound, !bound
}

// loraSlots: vLLM admits a request only when its adapter is loaded or a
// slot (--max-loras) is free; the others wait, listed in
// lora_requests_info, reason "deferred" where exposed. Every signal is a
// gauge, so one scrape is evidence.
func loraSlots(st *diagnose.Stats, l *sources.LoraInfo, kvRoom bool) (diagnose.Verdict, bool) {
	if l == nil || len(l.Waiting) == 0 || l.MaxLora <= 0 {
		return diagnose.Verdict{}, false
	}
	n := 1
	if len(l.Running) >= l.MaxLora {
		n++
	}
	if !bad(st.WaitingDeferred) && st.WaitingDeferred > 0 {
		n++
	}
	if kvRoom {
		n++
	}
	if n >= 2 {
		return diagnose.Verdict{Limit: diagnose.LimitLoRASlots, Signals: n, Of: 4,
			Flag: &diagnose.FlagChange{Flag: "--max-loras", From: intv(l.MaxLora), To: intv(min(l.MaxLora+len(l.Waiting), 2*l.MaxLora)),
				Why: say("%d adapters wait for one of %d slots, all taken by %d running; a slot for each waiting one, at most twice today's (a whole count, exact): min(%d + %d, 2 × %d) = %d",
					len(l.Waiting), l.MaxLora, len(l.Running), l.MaxLora, len(l.Waiting), l.MaxLora, min(l.MaxLora+len(l.Waiting), 2*l.MaxLora))},
			Evidence: []diagnose.Evidence{evNum("adapters waiting", float64(len(l.Waiting)), diagnose.UnitCount, 0),
				evNum("adapters running", float64(len(l.Running)), diagnose.UnitCount, 0), evNum("max_loras", float64(l.MaxLora), diagnose.UnitCount, 0),
				evNum("waiting (deferred)", st.WaitingDeferred, diagnose.UnitCount, 0), evNum("KV usage", st.KVUsage, diagnose.UnitRatio, 0)}}, true
	}
	return diagnose.Verdict{}, false
}

// xferLoss is the rate of requests whose KV transfer failed or expired,
// and their share of the finished requests, and whether it is large enough
// to bind (xferLossShare); not where no connector counts transfers.
func xferLoss(st *diagnose.Stats) (lost, share float64, ok bool) {
	if bad(st.KVXferFailRate) && bad(st.KVExpiredRate) {
		return math.NaN(), math.NaN(), false
	}
	lost = 0
	for _, r := range []float64{st.KVXferFailRate, st.KVExpiredRate} {
		if !bad(r) {
			lost += r
		}
	}
	if lost <= 0 {
		return 0, 0, false
	}
	share = math.Inf(1)
	if !bad(st.ReqRate) && st.ReqRate > 0 {
		share = lost / st.ReqRate
	}
	return lost, share, share >= xferLossShare
}

// batchPlateau is where the batch has sat with requests waiting: the
// running count per engine, for how long, and the fewest waiting then.
type batchPlateau struct {
	per     float64
	span    time.Duration
	waitMin float64
}

// plateau is the newest stretch of the window's points at which requests
// waited at every point (minPoints of them at least), when the batch's
// running count sat within flatRun of its highest at four in five of
// them: the cap binding now. Judged over the whole window, a queue that
// formed within it read as no plateau until the window no longer reached
// back before it (ten times the traffic on an 8B: running 256 of 256 with
// thousands waiting read "compute: batch and KV have room" for a minute,
// then "unexplained"). A scrape that catches the batch a few short (a
// client's abort frees a seat the next step refills from the queue) does
// not end it (a 14B at --max-num-seqs 48 whose clients began to give up
// read "unexplained" and "batch cap" by turns).
func plateau(ep *diagnose.EndpointView) (batchPlateau, bool) {
	tr := &ep.Trend
	none := batchPlateau{per: math.NaN(), waitMin: math.NaN()}
	if tr.Points < minPoints || len(ep.Spark) == 0 {
		return none, false
	}
	newest := ep.Spark[len(ep.Spark)-1].UnixMilli
	from := newest - tr.Span.Milliseconds()
	hi, waitMin := math.Inf(-1), math.Inf(1)
	first := len(ep.Spark)
	for i := len(ep.Spark) - 1; i >= 0; i-- {
		pt := &ep.Spark[i]
		r, w := float64(pt.V[diagnose.SpRunning]), float64(pt.V[diagnose.SpWaiting])
		if pt.UnixMilli < from || bad(r) || bad(w) || w < 1 || r < 1 {
			break
		}
		hi, waitMin, first = max(hi, r), min(waitMin, w), i
	}
	n := len(ep.Spark) - first
	if n < minPoints {
		return none, false
	}
	at := 0
	for _, pt := range ep.Spark[first:] {
		if hi-float64(pt.V[diagnose.SpRunning]) <= max(1, flatRun*hi) {
			at++
		}
	}
	if at < minPoints || 5*at < 4*n {
		return none, false
	}
	b := batchPlateau{per: math.Round(hi / float64(max(1, ep.Stats.Engines))), span: time.Duration(newest-ep.Spark[first].UnixMilli) * time.Millisecond, waitMin: waitMin}
	if ep.MaxNumSeqs > 0 && b.per < 0.9*float64(ep.MaxNumSeqs) {
		return b, false // flat well below the configured cap: something else holds it
	}
	return b, true
}

// specAcceptance is the share of drafted tokens accepted and the tokens
// drafted per step (num_speculative_tokens), NaN without drafts.
func specAcceptance(st *diagnose.Stats) (acc, k float64) {
	if bad(st.SpecDraftTokRate) || bad(st.SpecAcceptedRate) || st.SpecDraftTokRate <= 0 {
		return math.NaN(), math.NaN()
	}
	acc = st.SpecAcceptedRate / st.SpecDraftTokRate
	k = math.NaN()
	if !bad(st.SpecDraftRate) && st.SpecDraftRate > 0 {
		k = st.SpecDraftTokRate / st.SpecDraftRate
	}
	return acc, k
}

// specTokens is the advice for num_speculative_tokens: fewer drafts when
// the first ones are sometimes accepted, none when almost none are.
func specTokens(acc, k float64) diagnose.Value {
	if acc < draftCost/3 || bad(k) || k <= 1 {
		return diagnose.Str("off (drop --speculative-config)")
	}
	return intv(max(1, int(k/2)))
}

// specTokensWhy is how specTokens came to its number.
func specTokensWhy(acc, k float64) diagnose.Text {
	if acc < draftCost/3 || bad(k) || k <= 1 {
		return diagnose.Text{}
	}
	return say("; half the %s tokens drafted a step, rounded down to a whole token (at least 1): %s", dec(k, 1), specTokens(acc, k))
}

// stepCeiling reports whether the tokens per step sit at a ceiling: the
// median step already in the bucket of the 95th percentile, above the
// first buckets (a budget binds on large steps, not on one-token decodes).
func stepCeiling(q *diagnose.Quantiles) (float64, bool) {
	if bad(q.P50) || bad(q.P95) || q.Count < minObs || len(q.Bounds) == 0 || q.P95 < 256 {
		return 0, false
	}
	lo, hi := 0.0, math.Inf(1)
	for _, b := range q.Bounds {
		if b >= q.P95 {
			hi = b
			break
		}
		lo = b
	}
	if q.P50 <= lo || math.IsInf(hi, 1) {
		return 0, false
	}
	return hi, true
}

// arrivals sizes the work against the binding limit: when raising it as
// far as the evidence allows cannot absorb the arrival rate, the verdict is
// "arrivals exceed capacity", in replicas by Little's law, with the flag as
// the smaller part.
func arrivals(x *evalCtx, ep *diagnose.EndpointView, v *diagnose.Verdict, prev verdictMemo) {
	st, tr := &ep.Stats, &ep.Trend
	// Only a queue that keeps growing says arrivals outrun completions; a
	// standing queue is served at the rate it arrives and drains once the
	// limit moves.
	done := served(st)
	if bad(tr.WaitSlope) || tr.WaitSlope < growing || tr.Points < minPoints || bad(done) || done <= 0 || bad(tr.WaitMin) || tr.WaitMin < 1 {
		return
	}
	need := (st.ReqRate + tr.WaitSlope) / done
	// The rates are counts over the window: with n completions in it the
	// served rate is known to about 1/√n (Poisson). An excess within
	// twice that is the count's noise, not arrivals outrunning the
	// replica (a closed-loop client's queue of 350, wobbling ±6, read as
	// growing 0.06/s and flipped the verdict to "2 replicas" and back).
	noise := 2 / math.Sqrt(max(1, done*st.Span.Seconds()))
	u := &unit{ep: ep, st: st, model: soleModel(ep)}
	var gain float64
	switch v.Limit {
	case diagnose.LimitBatchCap:
		// Only a raise is this limit's flag: a fit at or below the cap
		// means the KV cache lets it grow no further.
		fc, n, lever := maxNumSeqsChange(u, 0.15, false)
		// The value the endpoint shows, and its gain: a held value stays
		// put while n moves within the hold's margin.
		fc = x.held(ep.Name, fc)
		if to, ok := asInt(fc.To); ok {
			n = to
		}
		if cur := currentMaxNumSeqs(ep); lever && cur > 0 && n > cur {
			gain = float64(n)/float64(cur) - 1
			v.Flag = &fc
		}
	case diagnose.LimitCompute:
		// No flag adds compute. A throttled GPU is not sized in
		// replicas: its clocks come back once it is cooled.
		if v.Throttled {
			return
		}
	case diagnose.LimitKVCache:
		// A cache full of useful work (few preemptions) is capacity; one
		// that thrashes wastes capacity its own flags win back first, by
		// an amount the evidence does not size.
		// Few preemptions are known only over enough completions that
		// 5 % of them is at least one: over fewer, none counted says
		// nothing (a thrashing V0 cache read as capacity for its first
		// three seconds).
		if bad(st.PreemptionsRate) || st.PreemptionsRate > 0.05*done || 0.05*done*st.Span.Seconds() < 1 {
			// Unless the router sent it the load that fills it: a pool
			// with room, set against what it serves thrashing (less than
			// it could), names the router.
			routedThrashing(x, ep, v, prev, need, noise)
			return
		}
	default:
		return // the flag's gain is not sized: it stays the verdict
	}
	v.Gain = gain
	if need <= (1+gain)*(1+noise) {
		return
	}
	reps := modelReplicas(x, u.model)
	// The pool's arrivals against its capacity at this replica's rate:
	// with its peers as loaded as it is, need ÷ (1 + gain) replicas of
	// each; with peers that have room, the router that sends this one
	// more than its share binds, and no replica is to be added.
	capacity := done * (1 + gain)
	pl := poolFill(x, ep, u.model, st.ReqRate+tr.WaitSlope, capacity)
	at := float64(reps) * pl.fill
	v.Served = capacity
	if prev.served > capacity && x.now.Sub(prev.servedAt) < servedMemory && !routes(pl, reps, prev.limit) {
		// What it served at its limit before, for the router's test
		// only: requests aborted while running deflate what it serves
		// now, not what it could.
		if p := poolFill(x, ep, u.model, st.ReqRate+tr.WaitSlope, prev.served); routes(p, reps, prev.limit) {
			pl, at, v.Served = p, float64(reps)*p.fill, prev.served
		}
	}
	if routes(pl, reps, prev.limit) {
		v.Under, v.Limit = v.Limit, diagnose.LimitRouting
		v.Now, v.Replicas, v.ReplicasAt, v.Flag = reps, 0, at, nil
		v.Evidence = append(v.Evidence, evNum("arrivals ÷ served", need, diagnose.UnitNumber, st.Span), evNum("pool arrivals", pl.arrivals, diagnose.UnitReqPerSec, st.Span),
			evNum("peers' arrivals (mean)", pl.peerRate, diagnose.UnitReqPerSec, st.Span), evNum("pool fill at this replica's rate", pl.fill, diagnose.UnitRatio, st.Span))
		return
	}
	v.Under, v.Limit = v.Limit, diagnose.LimitArrivals
	v.Now, v.Replicas, v.ReplicasAt = reps, replicaCount(reps, at), at
	if prev.replicas > 0 && prev.replicas != v.Replicas && math.Abs(at-prev.replicasAt) <= flagMargin*prev.replicasAt {
		// Held where it was shown until the evidence moves by more than
		// a recommended flag must: a need of 1.9 to 2.1 replicas read "2"
		// and "3" in turn, 9 times in a minute.
		v.Replicas, v.ReplicasAt = prev.replicas, prev.replicasAt
	}
	v.Evidence = append(v.Evidence, evNum("arrivals ÷ served", need, diagnose.UnitNumber, st.Span), evNum("raising the limit adds", gain, diagnose.UnitRatio, 0),
		evNum("queue growth", tr.WaitSlope, diagnose.UnitReqPerSec, tr.Span), evNum("served", done, diagnose.UnitReqPerSec, st.Span))
}

// replicaCount is the replicas a need of at (in replicas, unrounded)
// asks for, one more than today's at least.
func replicaCount(now int, at float64) int {
	return max(now+1, int(math.Ceil(at-1e-9)))
}

// currentMaxNumSeqs is --max-num-seqs per engine: the configured value, or
// the plateau the batch sits at with requests waiting (vLLM does not
// expose it; a batch pinned at one value while requests wait and KV has
// room is the cap).
func currentMaxNumSeqs(ep *diagnose.EndpointView) int {
	if ep.MaxNumSeqs > 0 {
		return ep.MaxNumSeqs
	}
	if p, ok := plateau(ep); ok && !bad(ep.Stats.KVUsage) && ep.Stats.KVUsage < kvFull {
		return int(p.per)
	}
	return 0
}

// poolVerdicts sums the endpoints' verdicts into one per model pool, one
// per configured pool and one for the fleet: the limit most members with a
// symptom share, with how many of the members agree; "idle" when every
// member is; "mixed" (no clear bottleneck) when the members with a symptom
// disagree.
func poolVerdicts(f *diagnose.Frame) {
	f.Fleet.Pools = f.Fleet.Pools[:0]
	var at map[string]int // pool → index, one pass over the endpoints
	var members [][]*diagnose.Verdict
	for i := range f.Endpoints {
		ep := &f.Endpoints[i]
		if ep.Pool == "" {
			continue
		}
		if at == nil {
			at = map[string]int{}
		}
		k, ok := at[ep.Pool]
		if !ok {
			k = len(f.Fleet.Pools)
			at[ep.Pool] = k
			f.Fleet.Pools = append(f.Fleet.Pools, diagnose.PoolView{Pool: ep.Pool})
			members = append(members, nil)
		}
		f.Fleet.Pools[k].Endpoints++
		if ep.Verdict.Limit != diagnose.LimitNone {
			members[k] = append(members[k], &ep.Verdict)
		}
	}
	for k := range f.Fleet.Pools {
		f.Fleet.Pools[k].Verdict = sumVerdicts(members[k])
	}
	slices.SortFunc(f.Fleet.Pools, func(a, b diagnose.PoolView) int { return strings.Compare(a.Pool, b.Pool) })
	for m := range f.Fleet.Models {
		mv := &f.Fleet.Models[m]
		var vs []*diagnose.Verdict
		for i := range f.Endpoints {
			ep := &f.Endpoints[i]
			if ep.Verdict.Limit != diagnose.LimitNone && slices.Contains(ep.Models, mv.Model) {
				vs = append(vs, &ep.Verdict)
			}
		}
		mv.Verdict = sumVerdicts(vs)
	}
	var vs []*diagnose.Verdict
	for i := range f.Endpoints {
		if f.Endpoints[i].Verdict.Limit != diagnose.LimitNone {
			vs = append(vs, &f.Endpoints[i].Verdict)
		}
	}
	f.Fleet.Verdict = sumVerdicts(vs)
}

func sumVerdicts(vs []*diagnose.Verdict) diagnose.Verdict {
	if len(vs) == 0 {
		return diagnose.Verdict{}
	}
	count := map[diagnose.Limit]int{}
	sick, idle, few := 0, 0, 0
	var order []diagnose.Limit
	for _, v := range vs {
		switch {
		case v.Limit == diagnose.LimitFewData:
			few++
		case v.Limit.Symptom():
			sick++
			if count[v.Limit] == 0 {
				order = append(order, v.Limit)
			}
			count[v.Limit]++
		case v.Limit == diagnose.LimitIdle || v.Limit == diagnose.LimitAsleep:
			idle++
		}
	}
	switch {
	case idle == len(vs):
		return diagnose.Verdict{Limit: diagnose.LimitIdle, Signals: idle, Of: len(vs)}
	case sick == 0 && few > 0:
		// A member queues or is slow but has not been watched long enough
		// to say why: the pool is not known to be healthy (opened on a
		// fleet mid-incident, the first seconds said "nothing waits").
		return diagnose.Verdict{Limit: diagnose.LimitFewData, Signals: few, Of: len(vs)}
	case sick == 0:
		// "Latency within target" holds for the pool only if it holds
		// for each member (a pool read so beside a member whose tokens
		// streamed at three times the target's gaps).
		pace := slices.ContainsFunc(vs, func(v *diagnose.Verdict) bool { return v.PaceOver })
		return diagnose.Verdict{Limit: diagnose.LimitHealthy, Signals: len(vs) - idle, Of: len(vs), PaceOver: pace}
	}
	best := order[0]
	for _, l := range order {
		if count[l] > count[best] {
			best = l
		}
	}
	if 2*count[best] <= sick && len(order) > 1 {
		return diagnose.Verdict{Limit: diagnose.LimitMixed, Signals: sick, Of: len(vs)}
	}
	// Compute named for a pool is a throttled GPU's when it is each such
	// member's (the demo's Qwen pool read "the GPU is busy" for a member
	// whose GPU ran past its slowdown temperature).
	throttled := best == diagnose.LimitCompute && !slices.ContainsFunc(vs, func(v *diagnose.Verdict) bool { return v.Limit == diagnose.LimitCompute && !v.Throttled })
	return diagnose.Verdict{Limit: best, Signals: count[best], Of: len(vs), Throttled: throttled}
}
