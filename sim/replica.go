package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// ReplicaConfig is one simulated vLLM server: what it serves, how it was
// started, the traffic it gets and the scenarios that happen to it. Zero
// fields take vLLM's defaults (or the generation's).
type ReplicaConfig struct {
	Name             string  // display name (default replica-N)
	Model            Model   // zero: Models[0]
	Profile          string  // generation: v0.6, v0.10, v0.11, latest (default)
	DP               int     // data-parallel engines behind the API server (V1)
	MaxNumSeqs       int     // --max-num-seqs
	MaxBatchedTokens int     // --max-num-batched-tokens
	MaxLoras         int     // --max-loras (with --enable-lora; 0: LoRA off)
	SpecTokens       int     // --speculative-config num_speculative_tokens (0: off)
	SpecAccept       float64 // each drafted token's acceptance, given the earlier ones were
	BlockSize        int     // --block-size (16)
	GPUMemUtil       float64 // --gpu-memory-utilization (0.9)
	NumGPUBlocks     int     // --num-gpu-blocks-override (0: from GPU memory)
	SwapSpaceGiB     float64 // V0 --swap-space (4)
	PrefixCaching    *bool   // --enable-prefix-caching (nil: the generation's default)
	Load             *Load   // baseline traffic (nil: ChatLoad)
	// Trimmed serves an exporter without the preemption counter, as older
	// V1 releases and llm-d's simulator do: the engine still preempts.
	Trimmed bool
	// FinishReasonLabel spells request_success_total's label finish_reason,
	// as llm-d's simulator does (vLLM writes finished_reason).
	FinishReasonLabel bool
	// HelpV1 serves V1's HELP texts from a V0 engine (a build with
	// backported help strings): only the metric names tell the generation.
	HelpV1 bool
	// HTTPStatusCodes serves http_requests_total with status codes ("200",
	// "400"), as prometheus-fastapi-instrumentator does when told not to
	// group them, instead of classes ("2xx", "4xx").
	HTTPStatusCodes bool
	// PDDecode is the decode side of prefill/decode disaggregation
	// (--kv-transfer-config with NixlConnector, V1): each prompt is
	// prefilled on a prefill instance and its KV read over NIXL; the
	// nixl_* counters are exposed.
	PDDecode  bool
	Scenarios []ScenarioSpec
}

// Replica is one simulated server with its engines, process and GPUs. Its
// methods are safe for concurrent use.
type Replica struct {
	mu      sync.Mutex
	fleet   *Fleet
	index   int
	cfg     ReplicaConfig
	profile *Profile
	ecfg    engineConfig
	engines []*engine
	rng     *rand.Rand
	load    Load
	arr     arrivals
	retryQ  []request // client retries, arrival = when they are sent
	// rejected counts the API server's 400s for prompts over
	// --max-model-len (http_requests_total{status="4xx"}), since the
	// process started.
	rejected float64
	now      time.Duration
	pending  []activation
	mp       bool // multiprocess registry
	lay      *layout
	labels   []engineLabels

	gpuBase   int
	apiPID    int
	procStart time.Duration

	leakRSS, leakGPU float64 // bytes/s
	leakSince        time.Duration
	restartAt        time.Duration // pending restart (-1: none)
	// redeployUtil, when > 0, is the --gpu-memory-utilization the next
	// restart comes back with: a deploy that changed it.
	redeployUtil float64
	downUntil    time.Duration // the restarted process serves again
	crashLoop    bool          // an OOM kill ends each process, the supervisor starts the next
	downs        []activation  // scenarios that take the endpoint off the network
}

type activation struct {
	at time.Duration
	sc *Scenario
}

const (
	sweepEvery = 100 * time.Millisecond
	rssBase    = 1.05 * (1 << 30)
	vmsBase    = 13.5e9
)

func newReplica(f *Fleet, i int, rc ReplicaConfig, seed uint64, gpuBase int) (*Replica, error) {
	if rc.Name == "" {
		rc.Name = fmt.Sprintf("replica-%d", i)
	}
	if rc.Model.Name == "" {
		rc.Model = Models[0]
	}
	if m := rc.Model; m.StepBase <= 0 || m.KVBytesPerToken <= 0 || m.MaxModelLen <= 0 || m.WeightBytes < 0 {
		return nil, fmt.Errorf("%s: model %q needs a step time, KV bytes per token and a max model length (start from LookupModel)", rc.Name, m.Name)
	}
	p, err := LookupProfile(rc.Profile)
	if err != nil {
		return nil, err
	}
	rc.Profile = p.Name
	load := ChatLoad()
	load.Rate *= rc.Model.speed()
	if rc.Load != nil {
		load = *rc.Load
	}
	rc.Load = &load
	rc.DP = max(rc.DP, 1)
	if p.Gen == sources.GenV0 && rc.DP > 1 {
		return nil, fmt.Errorf("%s: data parallelism needs a V1 engine", rc.Name)
	}
	if p.Server == sources.ServerSGLang && rc.DP > 1 {
		// SGLang's tokenizer-side series are one per server, its
		// scheduler's one per dp_rank: not simulated.
		return nil, fmt.Errorf("%s: the SGLang simulation has one engine (no --dp)", rc.Name)
	}
	var scs []activation
	for _, spec := range rc.Scenarios {
		sc, err := LookupScenario(spec.Name)
		if err != nil {
			return nil, err
		}
		if err := sc.check(p); err != nil {
			return nil, err
		}
		if sc.deploy != nil {
			sc.deploy(&rc)
		}
		scs = append(scs, activation{spec.Delay, sc})
	}
	sort.SliceStable(scs, func(a, b int) bool { return scs[a].at < scs[b].at })
	if rc.PDDecode && (p.Gen == sources.GenV0 || p.Server != sources.ServerVLLM) {
		return nil, fmt.Errorf("%s: P/D disaggregation with NixlConnector needs a vLLM V1 engine", rc.Name)
	}
	if rc.MaxNumSeqs <= 0 {
		rc.MaxNumSeqs = p.MaxNumSeqs
	}
	if rc.BlockSize <= 0 {
		rc.BlockSize = 16
	}
	if rc.GPUMemUtil <= 0 {
		rc.GPUMemUtil = 0.9
	}
	if rc.SwapSpaceGiB <= 0 && p.Gen == sources.GenV0 {
		rc.SwapSpaceGiB = 4
	}
	if rc.MaxBatchedTokens <= 0 {
		rc.MaxBatchedTokens = p.MaxBatchedTokens
		if !p.ChunkedPrefill {
			rc.MaxBatchedTokens = max(rc.Model.MaxModelLen, 2048)
		}
	}
	if !p.ChunkedPrefill && rc.MaxBatchedTokens < rc.Model.MaxModelLen {
		return nil, fmt.Errorf("%s: --max-num-batched-tokens %d is below --max-model-len %d without chunked prefill (vLLM refuses to start)",
			rc.Name, rc.MaxBatchedTokens, rc.Model.MaxModelLen)
	}
	caching := p.PrefixCaching
	if rc.PrefixCaching != nil {
		caching = *rc.PrefixCaching
	}
	blockBytes := float64(rc.BlockSize) * rc.Model.KVBytesPerToken
	if rc.NumGPUBlocks <= 0 {
		// vLLM's profiling: the budget minus weights and the activation
		// reserve, in whole blocks.
		rc.NumGPUBlocks = int((rc.GPUMemUtil*gpuMemTotal - rc.Model.WeightBytes - gpuReserveBytes) / blockBytes)
	}
	if rc.NumGPUBlocks*rc.BlockSize < rc.Model.MaxModelLen {
		return nil, fmt.Errorf("%s: %s with --gpu-memory-utilization %g leaves %d KV tokens, fewer than --max-model-len %d (vLLM refuses to start)",
			rc.Name, rc.Model.Name, rc.GPUMemUtil, max(0, rc.NumGPUBlocks*rc.BlockSize), rc.Model.MaxModelLen)
	}
	r := &Replica{fleet: f, index: i, cfg: rc, profile: p, load: load, pending: scs,
		gpuBase: gpuBase, apiPID: 4100 + 37*i, restartAt: -1}
	for _, a := range scs {
		if a.sc.down != nil {
			r.downs = append(r.downs, a)
		}
	}
	r.ecfg = engineConfig{profile: p, model: rc.Model, maxNumSeqs: rc.MaxNumSeqs, budget: rc.MaxBatchedTokens, maxLoras: rc.MaxLoras,
		specTokens: rc.SpecTokens, specAccept: rc.SpecAccept, pdDecode: rc.PDDecode,
		blockSize: rc.BlockSize, numGPUBlocks: rc.NumGPUBlocks,
		numCPUBlocks: int(rc.SwapSpaceGiB * (1 << 30) / blockBytes), gpuMemUtil: rc.GPUMemUtil,
		prefixCaching: caching, chunkedPrefill: p.ChunkedPrefill, countAborts: !f.hideAborts}
	for e := range rc.DP {
		r.engines = append(r.engines, newEngine(&r.ecfg, e))
	}
	r.rng = rand.New(rand.NewPCG(seed, uint64(i)+1))
	r.arr.rng = r.rng
	r.mp = p.multiprocess(rc.DP)
	r.lay = layoutFor(p, r.mp, rc.Model.MaxModelLen, exposeOpts{trimmed: rc.Trimmed, finishReason: rc.FinishReasonLabel, helpV1: rc.HelpV1, lora: rc.MaxLoras > 0, spec: rc.SpecTokens > 0,
		specTokens: rc.SpecTokens, nixl: rc.PDDecode})
	r.labels = r.buildLabels()
	r.activate()
	return r, nil
}

// activate starts the scenarios that are due and redraws arrivals from now.
func (r *Replica) activate() {
	for len(r.pending) > 0 && r.pending[0].at <= r.now {
		r.pending[0].sc.start(r)
		r.pending = r.pending[1:]
	}
	r.arr.reset(r.now, &r.load)
	for _, e := range r.engines {
		e.retryable = r.load.RetryShare > 0
	}
}

// advanceTo runs the replica's simulated time forward to t, event by event:
// arrivals, client retries, scenario starts, a restart, and a sweep for
// clients that gave up every 100 ms.
func (r *Replica) advanceTo(t time.Duration) {
	for r.now < t {
		next := min(t, r.arr.next, r.now+sweepEvery)
		if len(r.retryQ) > 0 {
			next = min(next, r.retryQ[0].arrival)
		}
		if len(r.pending) > 0 {
			next = min(next, max(r.pending[0].at, r.now))
		}
		if r.restartAt >= 0 {
			next = min(next, max(r.restartAt, r.now))
		}
		for _, e := range r.engines {
			e.runUntil(next)
		}
		r.now = next
		if len(r.pending) > 0 && r.pending[0].at <= r.now {
			r.activate()
		}
		if r.restartAt >= 0 && r.restartAt <= r.now {
			r.restart()
		}
		for r.arr.next <= r.now {
			at := r.arr.next
			if r.accepting() {
				e := r.route()
				rq := e.pool.get()
				if r.load.shape(r.rng, rq, at, r.ecfg.model.MaxModelLen, r.ecfg.blockSize) {
					e.add(rq)
				} else {
					r.rejected++
					e.pool.put(rq)
				}
			}
			r.arr.schedule(at, &r.load)
		}
		if r.load.Clients > 0 && r.accepting() {
			for n := r.load.Clients - r.inFlight(); n > 0; n-- {
				e := r.route()
				rq := e.pool.get()
				if r.load.shape(r.rng, rq, r.now, r.ecfg.model.MaxModelLen, r.ecfg.blockSize) {
					e.add(rq)
				} else {
					r.rejected++
					e.pool.put(rq)
				}
			}
		}
		for len(r.retryQ) > 0 && r.retryQ[0].arrival <= r.now {
			old := r.retryQ[0]
			r.retryQ = r.retryQ[1:]
			if r.accepting() {
				e := r.route()
				rq := e.pool.get()
				reshape(rq, &old, r.now)
				e.add(rq)
			}
		}
		for _, e := range r.engines {
			for i := range e.retries {
				if r.rng.Float64() < r.load.RetryShare {
					old := e.retries[i]
					old.arrival = r.now + time.Second + time.Duration(r.rng.Float64()*float64(2*time.Second))
					r.retryQ = append(r.retryQ, old)
				}
			}
			e.retries = e.retries[:0]
		}
		sort.SliceStable(r.retryQ, func(a, b int) bool { return r.retryQ[a].arrival < r.retryQ[b].arrival })
	}
}

// inFlight counts the requests the engines hold: a closed-loop client
// waits on each.
func (r *Replica) inFlight() int {
	n := 0
	for _, e := range r.engines {
		n += e.waiting.len() + len(e.running) + len(e.swapped)
	}
	return n
}

func reshape(dst, src *request, now time.Duration) {
	*dst = request{arrival: now, prompt: src.prompt, target: src.target, maxTokens: src.maxTokens, n: src.n, lora: src.lora,
		group: src.group, groupTokens: src.groupTokens, timeout: src.timeout, deadline: never}
	if src.timeout > 0 {
		dst.deadline = now + src.timeout
	}
}

// scaled is a request rate meant for the reference model, for this
// replica's model.
func (r *Replica) scaled(rate float64) float64 { return rate * r.cfg.Model.speed() }

// route is the data-parallel load balancer: the engine with the least work.
func (r *Replica) route() *engine {
	best := r.engines[0]
	for _, e := range r.engines[1:] {
		if e.load() < best.load() {
			best = e
		}
	}
	return best
}

func (r *Replica) restart() {
	at := r.restartAt
	r.restartAt = -1
	r.procStart = at
	r.downUntil = at + restartDown
	r.retryQ = r.retryQ[:0]
	r.rejected = 0
	if r.leakRSS > 0 {
		r.leakSince = at // the bug is still there; the new process starts small
	}
	if r.crashLoop {
		// The leak is in serving: it starts once the model is loaded and
		// reaches the memory limit crashUp later, when the kernel kills
		// the process and the supervisor starts it again.
		r.leakSince = r.downUntil
		r.restartAt = r.downUntil + crashUp
	}
	if r.redeployUtil > 0 {
		r.redeploy(r.redeployUtil)
		r.redeployUtil = 0
	}
	for _, e := range r.engines {
		e.restart(at)
		e.startedAt = r.downUntil // metrics are registered once the model loaded
		e.gpu.leak = 0
	}
}

// redeploy takes the --gpu-memory-utilization a restart comes back with:
// vLLM's profiling sizes the KV cache from it again, in whole blocks.
func (r *Replica) redeploy(util float64) {
	blockBytes := float64(r.cfg.BlockSize) * r.cfg.Model.KVBytesPerToken
	r.cfg.GPUMemUtil = util
	r.cfg.NumGPUBlocks = max(1, int((util*gpuMemTotal-r.cfg.Model.WeightBytes-gpuReserveBytes)/blockBytes))
	r.ecfg.gpuMemUtil, r.ecfg.numGPUBlocks = util, r.cfg.NumGPUBlocks
	for _, e := range r.engines {
		e.kv = newKVPool(r.ecfg.numGPUBlocks, r.ecfg.blockSize, r.ecfg.prefixCaching)
		e.gpu.memBase = util*gpuMemTotal + cudaContextB
	}
	r.labels = r.buildLabels()
}

// accepting reports whether clients reach the server now.
func (r *Replica) accepting() bool { return r.reachableAt(r.now) }

// reachableAt reports whether the endpoint accepts connections at simulated
// time t: a pure function of the scenario schedule, so the HTTP layer can
// open and close ports without running the model.
func (r *Replica) reachableAt(t time.Duration) bool {
	for _, a := range r.downs {
		if t >= a.at && a.sc.down(t-a.at) {
			return false
		}
	}
	return true
}

// Name is the replica's display name.
func (r *Replica) Name() string { return r.cfg.Name }

// Index is the replica's position in the fleet.
func (r *Replica) Index() int { return r.index }

// Config returns the replica's resolved configuration (after scenarios'
// deployment changes).
func (r *Replica) Config() ReplicaConfig { return r.cfg }

// Profile is the vLLM generation the replica impersonates.
func (r *Replica) Profile() *Profile { return r.profile }

// Reachable reports whether the endpoint accepts connections now.
func (r *Replica) Reachable() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fleet.sync(r)
	return r.accepting()
}

// Now is the replica's simulated wall-clock time.
func (r *Replica) Now() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fleet.epoch.Add(r.now)
}

// PIDs returns the fake process ids: the API server and one engine-core
// process per engine (the same id in V0, whose engine runs in-process).
func (r *Replica) PIDs() (api int, engines []int) {
	for e := range r.engines {
		engines = append(engines, r.enginePID(e))
	}
	return r.apiPID, engines
}

func (r *Replica) enginePID(e int) int {
	if r.profile.Gen == sources.GenV0 {
		return r.apiPID
	}
	return r.apiPID + 1 + e
}

// GPUIndexes are the indexes of the replica's devices in the fleet's
// simulated GPU snapshot.
func (r *Replica) GPUIndexes() []int {
	var out []int
	for e := range r.engines {
		out = append(out, r.gpuBase+e)
	}
	return out
}

// State is the replica's ground truth, for tests and debugging.
type State struct {
	Running, Waiting, Swapped int
	KVUsage                   float64 // largest over engines
	Preemptions               float64
	Reachable                 bool
	StepsRun, StepsTotal      float64 // scheduler runs and engine steps they covered
}

// State reads the replica's current ground truth.
func (r *Replica) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fleet.sync(r)
	s := State{Reachable: r.accepting()}
	for _, e := range r.engines {
		s.Running += len(e.running)
		s.Waiting += e.waiting.len()
		s.Swapped += len(e.swapped)
		s.KVUsage = math.Max(s.KVUsage, e.kv.usage())
		s.Preemptions += e.m.counters[sources.CPreemptions]
		s.StepsRun += e.stepsRun
		s.StepsTotal += e.stepsTotal
	}
	return s
}

// errRefused is what a scrape of an unreachable replica fails with, worded
// like the HTTP fetcher's message.
var errRefused = errors.New("connection refused (is vLLM running on this port?)")

// Scrape renders the replica's /metrics as a scraper would receive it and
// normalizes it, timed at the replica's simulated now: the in-process path
// from the model to diagnose without HTTP. n must be reused for this
// replica across scrapes (its cache is per target).
func (r *Replica) Scrape(n *sources.Normalizer, f Format) sources.Scrape {
	r.mu.Lock()
	r.fleet.sync(r)
	s := sources.Scrape{Target: r.cfg.Name, Time: r.fleet.epoch.Add(r.now)}
	if !r.accepting() {
		r.mu.Unlock()
		s.Err = errRefused
		return s
	}
	buf := getBuf()
	*buf = r.appendExposition((*buf)[:0], f)
	r.mu.Unlock()
	snap, err := n.Normalize(*buf, f.ContentType())
	putBuf(buf)
	if err != nil {
		s.Err = err
		return s
	}
	s.Data = snap
	return s
}

// Exposition renders /metrics in format f at the replica's current time.
func (r *Replica) Exposition(f Format) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fleet.sync(r)
	return r.appendExposition(nil, f)
}

// appendGPUs appends the replica's devices as NVML would report them.
func (r *Replica) appendGPUs(dst []sources.GPU, base int) []sources.GPU {
	up := r.now >= r.downUntil
	for i, e := range r.engines {
		idx := base + i
		var procs []sources.GPUProcess
		if up {
			name := "VLLM::EngineCore"
			switch {
			case r.profile.Gen == sources.GenV0:
				name = "python3"
			case len(r.engines) > 1:
				name = fmt.Sprintf("VLLM::EngineCore_DP%d", i)
			}
			if r.leakGPU > 0 {
				e.gpu.leak = r.leakGPU * (r.now - r.leakSince).Seconds()
			}
			procs = []sources.GPUProcess{{PID: r.enginePID(i), Name: name, UsedBytes: e.gpu.memBase + e.gpu.leak}}
		}
		why := fmt.Sprintf("simulated GPU of %s (%s), engine %d", r.cfg.Name, r.cfg.Model.Name, i)
		dst = append(dst, e.gpu.reading(idx, gpuUUID(r.fleet.seed, idx), gpuBus(idx), procs, why))
	}
	return dst
}

// process values of the API server, for process_* metrics.
func (r *Replica) rss() float64 {
	v := rssBase + 8*(1<<20)*math.Mod((r.now-r.procStart).Seconds(), 37)/37
	if r.leakRSS > 0 {
		v += r.leakRSS * max(0, r.now-max(r.leakSince, r.procStart)).Seconds()
	}
	return math.Round(v/4096) * 4096
}

func (r *Replica) cpuSeconds() float64 {
	v := 0.02 * (r.now - r.procStart).Seconds()
	for _, e := range r.engines {
		v += 4e-5 * e.m.counters[sources.CGenTokens]
		for _, f := range e.m.finished {
			v += 1.5e-3 * f
		}
	}
	return math.Round(v*100) / 100
}

func (r *Replica) openFDs() float64 {
	n := 38
	for _, e := range r.engines {
		n += len(e.running) + e.waiting.len() + len(e.swapped)
	}
	return float64(n)
}
