package sim

import (
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// engineConfig is the deployment of one engine: what `vllm serve` was
// started with and what its GPU profiling found.
type engineConfig struct {
	profile    *Profile
	model      Model
	maxNumSeqs int
	budget     int // max_num_batched_tokens
	maxLoras   int // --max-loras; 0: LoRA off
	// Speculative decoding (--speculative-config): specTokens drafted a
	// step, each accepted with probability specAccept given the ones
	// before it were (0 tokens: off).
	specTokens     int
	specAccept     float64
	blockSize      int
	numGPUBlocks   int
	numCPUBlocks   int // V0 swap space
	gpuMemUtil     float64
	prefixCaching  bool
	chunkedPrefill bool
	countAborts    bool
	// P/D disaggregation's decode side (--kv-transfer-config with
	// NixlConnector): every request's prompt KV is read from its prefill
	// instance; xferFail of the reads fail (a degraded link).
	pdDecode bool
	xferFail float64
}

const (
	// maxRun bounds how much simulated time one run of identical decode
	// steps may cover, so GPU readings and gauges stay smooth.
	maxRun = 250 * time.Millisecond
	// v0LogInterval is V0's local stats interval, over which it computes
	// the average throughput gauges.
	v0LogInterval = 5 * time.Second
	// pcieBytesPerSec is the effective host link for V0 swapping.
	pcieBytesPerSec = 25e9
	// P/D: a KV read over NIXL costs its setup and the bytes at the RDMA
	// link's rate (a 200 Gb/s NIC); a read on a degraded link fails once
	// UCX's retries give up, xferRetryTimeout after it started.
	xferSetup        = 2 * time.Millisecond
	rdmaBytesPerSec  = 25e9
	xferRetryTimeout = time.Second
)

// engine is one vLLM engine core: a scheduler over a paged KV cache running
// steps back to back while it has work. It never reads the clock: runUntil
// moves its own simulated time forward.
type engine struct {
	cfg *engineConfig
	idx int
	now time.Duration

	waiting queue
	running []*request
	swapped []*request // V0
	sched   []*request // scheduled in the current step
	kv      kvPool
	cpuUsed int
	m       metrics
	gpu     gpuModel
	pool    requestPool

	startedAt time.Duration // engine (re)start, for _created
	hung      bool          // a stuck step: holds its requests, computes nothing (engine-stalled)
	asleep    bool          // put to sleep (/sleep level 1): serves nothing
	swapCost  time.Duration // V0 transfers to add to the current step
	xferNext  time.Duration // the earliest KV read in flight lands (never: none)
	failAcc   float64       // P/D: the failing share, spread evenly over the reads
	retries   []request     // timed-out requests whose client will retry (shapes)
	retryable bool

	// V0 interval throughput gauges
	logAt                time.Duration
	logPrompt, logGen    float64
	avgPrompt, avgGen    float64
	stepsRun, stepsTotal float64 // diagnostics for benchmarks
}

func newEngine(cfg *engineConfig, idx int) *engine {
	e := &engine{cfg: cfg, idx: idx}
	e.kv = newKVPool(cfg.numGPUBlocks, cfg.blockSize, cfg.prefixCaching)
	e.m = newMetrics(cfg.profile, cfg.model.MaxModelLen)
	e.gpu = newGPUModel(cfg)
	return e
}

func (e *engine) v0() bool { return e.cfg.profile.Gen == sources.GenV0 }

// load is what the data-parallel router balances on.
func (e *engine) load() int { return e.waiting.len() + len(e.running) + len(e.swapped) }

func (e *engine) runningSeqs() int {
	if !e.v0() {
		return len(e.running)
	}
	n := 0
	for _, r := range e.running {
		n += r.n
	}
	return n
}

// add queues a new request (the API server hands it to the engine core).
func (e *engine) add(r *request) {
	r.scheduled, r.firstTok, r.lastTok = -1, -1, r.arrival
	r.remote = e.cfg.pdDecode
	e.waiting.pushBack(r)
}

// runUntil runs engine steps until its time reaches t. A step in flight at
// t completes, so the engine may end slightly past t.
func (e *engine) runUntil(t time.Duration) {
	if e.hung {
		// A hung step (a NCCL wait, a dead worker): time passes, nothing
		// is scheduled, nothing finishes and no client deadline is
		// honoured by the engine; the API server still answers.
		e.gpu.idle(t - e.now)
		e.now = t
		return
	}
	e.expire()
	stuck := 0
	for e.now < t {
		if len(e.running)+e.waiting.len()+len(e.swapped) == 0 || stuck > 2 {
			e.gpu.idle(t - e.now)
			e.now = t
			break
		}
		if e.step(t) {
			stuck = 0
		} else if e.xferNext > e.now && e.xferNext < t {
			// Nothing to compute until a KV read lands.
			e.gpu.idle(e.xferNext - e.now)
			e.now, stuck = e.xferNext, 0
		} else {
			stuck++
		}
	}
	if e.v0() && e.now-e.logAt >= v0LogInterval {
		secs := (e.now - e.logAt).Seconds()
		e.avgPrompt = (e.m.counters[sources.CPromptTokens] - e.logPrompt) / secs
		e.avgGen = (e.m.counters[sources.CGenTokens] - e.logGen) / secs
		e.logAt, e.logPrompt, e.logGen = e.now, e.m.counters[sources.CPromptTokens], e.m.counters[sources.CGenTokens]
	}
}

// step schedules one engine step and executes it (with its identical
// successors). It reports whether time moved.
func (e *engine) step(t time.Duration) bool {
	var admitted, preempted bool
	if e.v0() {
		admitted, preempted = e.scheduleV0()
	} else {
		admitted, preempted = e.scheduleV1()
	}
	if len(e.sched) == 0 {
		return false
	}
	e.execute(t, !admitted && !preempted)
	return true
}

// scheduleV1 follows V1's unified scheduler: running requests first, in
// order, each taking its next tokens (one to decode, or a prefill chunk)
// from the token budget, preempting the newest running request (recompute)
// when the KV cache cannot grow; then, if nothing was preempted, waiting
// requests are admitted while seats, budget and blocks last.
func (e *engine) scheduleV1() (admitted, preempted bool) {
	e.sched = e.sched[:0]
	budget := e.cfg.budget
	for i := 0; i < len(e.running) && budget > 0; i++ {
		r := e.running[i]
		n := min(r.numTokens()-r.computed, budget)
		ok := true
		for !e.kv.grow(r, n) {
			v := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.preemptRecompute(v)
			preempted = true
			if v == r {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
		r.sched = n
		budget -= n
		e.sched = append(e.sched, r)
	}
	if preempted {
		return false, true
	}
	// LoRA: as vLLM's V1 scheduler, a waiting request whose adapter is not
	// among the running ones while --max-loras adapters run is skipped: it
	// stays waiting, in order, behind the ones admitted.
	var skipped []*request
	defer func() {
		for i := len(skipped) - 1; i >= 0; i-- {
			e.waiting.pushFront(skipped[i])
		}
	}()
	e.xferNext = never
	for e.waiting.len() > 0 && len(e.running) < e.cfg.maxNumSeqs && budget > 0 {
		r := e.waiting.front()
		if !e.loraFits(r) {
			skipped = append(skipped, e.waiting.popFront())
			continue
		}
		if r.remote {
			if !e.remoteKV(r) {
				if r.xferAt == 0 {
					break // no blocks to read the KV into
				}
				skipped = append(skipped, e.waiting.popFront())
				e.xferNext = min(e.xferNext, r.xferAt)
				continue
			}
		}
		hit := 0
		if r.computed == 0 {
			hit = e.kv.lookup(r, e.now)
		}
		n := min(r.numTokens()-r.computed, budget)
		if !e.cfg.chunkedPrefill && n < r.numTokens()-r.computed {
			e.kv.unlookup(r, hit, e.now)
			break
		}
		if !e.kv.grow(r, n) {
			e.kv.unlookup(r, hit, e.now)
			break
		}
		e.waiting.popFront()
		if r.scheduled < 0 {
			r.scheduled = e.now
			r.cachedHit = hit
		}
		r.sched = n
		budget -= n
		e.running = append(e.running, r)
		e.sched = append(e.sched, r)
		admitted = true
	}
	return admitted, false
}

// remoteKV moves a P/D request's KV read along, as vLLM's scheduler with
// NixlConnector does: the first time the request comes up, blocks for its
// whole prompt are allocated and the read starts (the request waits for
// remote KVs, taking no seat and no budget); once the read lands the request
// is scheduled with all but its last prompt token computed, or, when the
// read failed, with its blocks freed, to recompute the prompt here. It
// reports whether r is ready to schedule; false with r.xferAt 0: no blocks.
func (e *engine) remoteKV(r *request) bool {
	switch {
	case r.xferAt == 0:
		if !e.kv.grow(r, r.prompt-r.computed) {
			return false
		}
		bytes := float64(r.prompt) * e.cfg.model.KVBytesPerToken
		r.xferAt = e.now + xferSetup + time.Duration(bytes/rdmaBytesPerSec*float64(time.Second))
		if e.failAcc += e.cfg.xferFail; e.failAcc >= 1 {
			e.failAcc--
			r.xferFails = true
			r.xferAt = e.now + xferRetryTimeout
		}
		return false
	case r.xferAt > e.now:
		return false
	case r.xferFails:
		e.m.counters[sources.CKVTransferFailed]++
		e.kv.release(r, e.now)
		r.remote, r.computed = false, 0
		return true
	}
	r.remote, r.computed, r.external = false, r.prompt-1, r.prompt-1
	return true
}

// specExpected is the mean number of drafted tokens accepted a step:
// α + α² + … + α^k (a draft is accepted only after every one before it).
func (e *engine) specExpected() float64 {
	a, sum, p := e.cfg.specAccept, 0.0, 1.0
	for range e.cfg.specTokens {
		p *= a
		sum += p
	}
	return sum
}

// specFactor is what speculative decoding does to the time of a decoded
// token: a step verifies k drafted tokens besides its own, each costing
// specDraftCost of a plain decode step (drafting it, verifying the longer
// sequence), and yields 1 + E tokens. Without drafts, 1.
func (e *engine) specFactor() float64 {
	if e.cfg.specTokens <= 0 {
		return 1
	}
	return (1 + specDraftCost*float64(e.cfg.specTokens)) / (1 + e.specExpected())
}

// specDraftCost is one drafted token's cost relative to a decode step of
// the target model (an n-gram or small draft model plus the verification).
const specDraftCost = 0.25

// loraFits reports whether r's adapter can run: LoRA off, the base model,
// an adapter already running, or a free adapter slot.
func (e *engine) loraFits(r *request) bool {
	if e.cfg.maxLoras <= 0 || r.lora == 0 {
		return true
	}
	var seen [64]bool
	n := 0
	for _, q := range e.running {
		if q.lora == r.lora {
			return true
		}
		if q.lora > 0 && q.lora < len(seen) && !seen[q.lora] {
			seen[q.lora] = true
			n++
		}
	}
	return n < e.cfg.maxLoras
}

// loraAdapters lists the adapters of the running and of the waiting
// requests, as lora_requests_info does.
func (e *engine) loraAdapters(running, waiting map[int]bool) {
	for _, q := range e.running {
		if q.lora > 0 {
			running[q.lora] = true
		}
	}
	for i := e.waiting.head; i < len(e.waiting.items); i++ {
		if q := e.waiting.items[i]; q.lora > 0 {
			waiting[q.lora] = true
		}
	}
}

// scheduleV0 follows V0's default scheduler without chunked prefill: a step
// is either whole prompts (admitted while budget, seats and blocks above
// the 1% watermark last) or decodes of every running request, preempting
// the newest when blocks run out: recompute for single sequences, swap to
// CPU for parallel samples; swapped requests come back before new ones.
func (e *engine) scheduleV0() (admitted, preempted bool) {
	e.sched = e.sched[:0]
	watermark := e.kv.total / 100
	seqs := e.runningSeqs()
	if len(e.swapped) == 0 {
		budget := e.cfg.budget
		for e.waiting.len() > 0 {
			r := e.waiting.front()
			tok := r.numTokens()
			if seqs+r.n > e.cfg.maxNumSeqs || tok > budget {
				break
			}
			hit := 0
			if r.computed == 0 {
				hit = e.kv.lookup(r, e.now)
			}
			need := e.kv.ownBlocks(r, tok) - r.blocks
			if e.kv.available()-need < watermark || !e.kv.grow(r, tok-r.computed) {
				e.kv.unlookup(r, hit, e.now)
				break
			}
			e.waiting.popFront()
			if r.scheduled < 0 {
				r.scheduled = e.now
				r.cachedHit = hit
			}
			r.sched = tok - r.computed
			budget -= tok
			seqs += r.n
			e.running = append(e.running, r)
			e.sched = append(e.sched, r)
			admitted = true
		}
		if admitted {
			return true, false
		}
	}
	for i := 0; i < len(e.running); i++ {
		r := e.running[i]
		ok := true
		for !e.kv.grow(r, 1) {
			v := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.preemptV0(v)
			preempted = true
			if v == r {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
		r.sched = 1
		e.sched = append(e.sched, r)
	}
	if preempted {
		return false, true
	}
	seqs = e.runningSeqs()
	for len(e.swapped) > 0 {
		r := e.swapped[0]
		if seqs+r.n > e.cfg.maxNumSeqs || e.kv.available()-r.cpuBlocks < watermark {
			break
		}
		e.swapped = e.swapped[1:]
		e.kv.alloc(r.cpuBlocks)
		r.blocks, e.cpuUsed, r.cpuBlocks = r.cpuBlocks, e.cpuUsed-r.cpuBlocks, 0
		e.swapCost += e.transfer(r.blocks)
		seqs += r.n
		e.running = append(e.running, r)
		if e.kv.grow(r, 1) {
			r.sched = 1
			e.sched = append(e.sched, r)
		}
		admitted = true
	}
	return admitted, false
}

func (e *engine) transfer(blocks int) time.Duration {
	bytes := float64(blocks*e.cfg.blockSize) * e.cfg.model.KVBytesPerToken
	return time.Duration(bytes / pcieBytesPerSec * float64(time.Second))
}

// preemptRecompute frees everything the request holds and sends it back to
// the front of the queue; it will prefill prompt and output again.
func (e *engine) preemptRecompute(r *request) {
	e.kv.release(r, e.now)
	r.computed = 0
	r.sched = 0
	e.m.counters[sources.CPreemptions]++
	e.waiting.pushFront(r)
}

func (e *engine) preemptV0(r *request) {
	if r.n > 1 && e.cpuUsed+r.blocks <= e.cfg.numCPUBlocks && !r.prefixRef {
		e.cpuUsed += r.blocks
		r.cpuBlocks = r.blocks
		e.kv.free(r.blocks)
		r.blocks = 0
		r.sched = 0
		e.swapCost += e.transfer(r.cpuBlocks)
		e.m.counters[sources.CPreemptions]++
		e.swapped = append(e.swapped, r)
		return
	}
	// V0 aborts the engine when swap space runs out; the simulator
	// recomputes instead, so a scenario never kills its own server.
	e.preemptRecompute(r)
}

// execute runs the scheduled step. When aggregate is set (a pure decode
// step that admitted and preempted nothing) the steps that follow are
// identical until a request finishes, a client gives up, the cache cannot
// grow or t is reached, so they run as one: k tokens per request, one
// histogram observation with weight k.
func (e *engine) execute(t time.Duration, aggregate bool) {
	mdl := &e.cfg.model
	prefillTok, decodeSeqs, ctx := 0, 0, 0
	for _, r := range e.sched {
		if r.decoding() {
			decodeSeqs += r.n
			ctx += r.computed * r.n
		} else {
			prefillTok += r.sched
		}
	}
	cost := mdl.StepBase + time.Duration(len(e.sched))*mdl.PerSeq +
		time.Duration(ctx)*mdl.PerCtxToken + time.Duration(prefillTok)*mdl.PerPrefillToken
	perToken := e.specFactor()
	if decodeSeqs > 0 {
		cost = time.Duration(float64(cost) * perToken)
	}
	dt := time.Duration(float64(cost)*e.gpu.slowdown()) + e.swapCost
	e.swapCost = 0
	k := 1
	if aggregate && prefillTok == 0 {
		k = e.runLength(t, dt)
	}
	span := time.Duration(k) * dt
	end := e.now + span
	e.m.observe(sources.HIterTokens, float64(prefillTok+decodeSeqs), float64(k))
	if e.v0() {
		e.m.counters[sources.CPromptTokens] += float64(prefillTok)
	}
	first := e.now + dt
	gen, bulk := 0, 0.0
	for _, r := range e.sched {
		if r.decoding() {
			e.m.observe(sources.HITL, (first - r.lastTok).Seconds(), 1)
			bulk += float64(k - 1)
			r.computed += k
			r.out += k
			gen += k * r.n
			r.lastTok = end
		} else {
			r.computed += r.sched
			e.kv.publish(r, end)
			if r.computed >= r.numTokens() {
				e.sampled(r, end)
				gen += r.n
			}
		}
		r.sched = 0
	}
	e.m.observe(sources.HITL, dt.Seconds(), bulk)
	e.m.counters[sources.CGenTokens] += float64(gen)
	if e.cfg.specTokens > 0 && decodeSeqs > 0 {
		// Per decoded token: 1 ÷ (1 + E) verification steps, each with
		// its drafts, E of them accepted on average.
		steps := float64(k*decodeSeqs) / (1 + e.specExpected())
		e.m.counters[sources.CSpecDrafts] += steps
		e.m.counters[sources.CSpecDraftTokens] += steps * float64(e.cfg.specTokens)
		e.m.counters[sources.CSpecAccepted] += steps * e.specExpected()
		// By position: a draft's i-th token is accepted with a^(i+1).
		if e.m.specPos == nil {
			e.m.specPos = make([]float64, e.cfg.specTokens)
		}
		p := 1.0
		for i := range e.cfg.specTokens {
			p *= e.cfg.specAccept
			e.m.specPos[i] += steps * p
		}
	}
	e.gpu.run(span, prefillTok, decodeSeqs)
	e.stepsRun++
	e.stepsTotal += float64(k)
	e.now = end

	j := 0
	for _, r := range e.running {
		switch {
		case r.out >= r.target:
			reason := finishStop
			if r.target >= r.maxTokens {
				reason = finishLength
			}
			e.finish(r, reason)
		case r.deadline <= e.now:
			e.abort(r)
		default:
			e.running[j] = r
			j++
		}
	}
	clear(e.running[j:])
	e.running = e.running[:j]
}

// runLength is how many identical decode steps of length dt can run from now.
func (e *engine) runLength(t time.Duration, dt time.Duration) int {
	kmax := int((t - e.now + dt - 1) / dt)
	kmax = min(max(kmax, 1), max(1, int(maxRun/dt)))
	for _, r := range e.sched {
		kmax = min(kmax, r.target-r.out)
	}
	if e.xferNext > e.now && e.xferNext != never {
		kmax = min(kmax, max(1, int((e.xferNext-e.now+dt-1)/dt)))
	}
	for _, r := range e.running {
		if r.deadline != never {
			kmax = min(kmax, max(1, int((r.deadline-e.now+dt-1)/dt)))
		}
	}
	if kmax <= 1 {
		return 1
	}
	// The first step's blocks are allocated; the others need growth.
	need := func(k int) int {
		n := 0
		for _, r := range e.sched {
			n += e.kv.ownBlocks(r, r.computed+k) - r.blocks
		}
		return n
	}
	lo, hi := 1, kmax
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if need(mid) <= e.kv.available() {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo > 1 {
		for _, r := range e.sched {
			extra := e.kv.ownBlocks(r, r.computed+lo) - r.blocks
			e.kv.alloc(extra)
			r.blocks += extra
		}
	}
	return lo
}

// sampled handles the token that ends a prefill: the first token, or the
// next one after a recompute.
func (e *engine) sampled(r *request, end time.Duration) {
	r.out++
	if r.firstTok < 0 {
		r.firstTok = end
		e.m.observe(sources.HTTFT, (end - r.arrival).Seconds(), 1)
		if !e.v0() && !r.counted {
			// V1 counts a request's prompt once, when its first token is out.
			r.counted = true
			p, c := float64(r.prompt), float64(r.cachedHit)
			e.m.counters[sources.CPromptTokens] += p
			e.m.counters[sources.CPromptCached] += c
			x := float64(r.external)
			e.m.promptBy[0] += p - c - x
			e.m.promptBy[1] += c
			e.m.promptBy[2] += x
		}
	} else if e.v0() {
		// V0 records the re-prefill after a recompute as another
		// time-to-first-token, measured from the last token.
		e.m.observe(sources.HTTFT, (end - r.lastTok).Seconds(), 1)
	} else {
		e.m.observe(sources.HITL, (end - r.lastTok).Seconds(), 1)
	}
	r.lastTok = end
}

// finish records a finished request the way the output processor does.
func (e *engine) finish(r *request, reason int) {
	e.kv.release(r, e.now)
	e.m.finished[reason]++
	now := e.now
	m := &e.m
	m.observe(sources.HE2E, (now - r.arrival).Seconds(), 1)
	if r.scheduled >= 0 {
		m.observe(sources.HQueue, (r.scheduled - r.arrival).Seconds(), 1)
		last := r.lastTok
		if r.firstTok < 0 {
			last = now
		}
		m.observe(sources.HInference, (last - r.scheduled).Seconds(), 1)
		if r.firstTok >= 0 {
			m.observe(sources.HPrefill, (r.firstTok - r.scheduled).Seconds(), 1)
			m.observe(sources.HDecode, (r.lastTok - r.firstTok).Seconds(), 1)
		}
	} else {
		m.observe(sources.HQueue, (now - r.arrival).Seconds(), 1)
	}
	if r.out > 1 {
		m.observe(sources.HTPOT, (r.lastTok-r.firstTok).Seconds()/float64(r.out-1), 1)
	}
	m.observe(sources.HPromptLen, float64(r.prompt), 1)
	m.observe(sources.HGenLen, float64(r.out*r.n), 1)
	m.observe(sources.HMaxGenTokens, float64(r.out), 1)
	m.observe(sources.HParamsN, float64(r.n), 1)
	m.observe(sources.HParamsMaxTokens, float64(r.maxTokens), 1)
	m.observe(sources.HPrefillKVComputed, float64(r.prompt-r.cachedHit), 1)
	e.pool.put(r)
}

// abort ends a request whose client gave up. Whether it shows up as
// finished_reason="abort" depends on countAborts (see Options).
func (e *engine) abort(r *request) {
	if e.retryable && r.deadline == r.arrival+r.timeout {
		e.retries = append(e.retries, *r)
	}
	if r.cpuBlocks > 0 {
		e.cpuUsed -= r.cpuBlocks
		r.cpuBlocks = 0
	}
	if e.cfg.countAborts {
		e.finish(r, finishAbort)
		return
	}
	e.kv.release(r, e.now)
	e.pool.put(r)
}

// expire aborts queued and swapped requests whose clients gave up.
func (e *engine) expire() {
	now := e.now
	e.waiting.filter(func(r *request) bool {
		if r.deadline <= now {
			e.abort(r)
			return false
		}
		return true
	})
	j := 0
	for _, r := range e.swapped {
		if r.deadline <= now {
			e.abort(r)
			continue
		}
		e.swapped[j] = r
		j++
	}
	clear(e.swapped[j:])
	e.swapped = e.swapped[:j]
}

// restart drops every request and counter: a new process with an empty
// cache, created at now.
func (e *engine) restart(now time.Duration) {
	e.waiting.clear()
	clear(e.running)
	e.running = e.running[:0]
	clear(e.swapped)
	e.swapped = e.swapped[:0]
	e.kv.reset()
	e.cpuUsed = 0
	e.m.reset()
	e.now = now
	e.startedAt = now
	e.logAt, e.logPrompt, e.logGen, e.avgPrompt, e.avgGen = now, 0, 0, 0, 0
	e.retries = e.retries[:0]
}
