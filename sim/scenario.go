package sim

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// Rates in the catalogue are for the reference model (Models[0]); a replica
// of a slower model gets proportionally less traffic (Replica.scaled), so a
// scenario means the same state whatever the model.

// Scenario drives a replica into a state the diagnosis must recognise, by
// changing what production changes: the deployment (flags the replica was
// started with, its normal traffic) from the start, and the traffic or the
// environment from the scenario's start time. None writes a symptom.
type Scenario struct {
	Name    string
	Summary string // what changes, in a line
	V0Only  bool
	// deploy adjusts the replica's configuration and baseline traffic
	// before its engines start.
	deploy func(c *ReplicaConfig)
	// start changes the traffic or environment at the start time.
	start func(r *Replica)
	// down, when set, says whether the endpoint refuses connections d
	// after the start.
	down func(d time.Duration) bool
}

// Scenarios is the catalogue, in the order the docs list it.
var Scenarios = []Scenario{
	{Name: "healthy", Summary: "a chat application at moderate load: no preemption, short queues",
		start: func(r *Replica) {}},
	{Name: "busy", Summary: "traffic grows 2.2×: bigger batches and a busier GPU, latency still within chat targets",
		start: func(r *Replica) { r.load.Rate *= 2.2 }},
	{Name: "kv-thrashing", Summary: "deployed with --gpu-memory-utilization lowered to share the GPU (a ~200k-token KV cache); long-document traffic arrives (4k-token prompts, 1.5k-token answers): more long sequences than the cache holds, preemption after preemption",
		deploy: func(c *ReplicaConfig) { c.GPUMemUtil = utilForKV(c.Model, 200_000) },
		start: func(r *Replica) {
			l := &r.load
			l.Rate, l.PromptMedian, l.PromptSigma, l.OutputMedian, l.OutputSigma, l.MaxTokens = r.scaled(1.8), 4000, 0.4, 1500, 0.4, 2048
			l.PrefixShare = 0.2
		}},
	{Name: "kv-saturated-trimmed", Summary: "kv-thrashing's deployment and traffic behind a trimmed exporter (older V1, llm-d's simulator): the engine preempts, no counter says so; the KV cache sits pinned while requests queue",
		deploy: func(c *ReplicaConfig) { c.GPUMemUtil, c.Trimmed = utilForKV(c.Model, 200_000), true },
		start: func(r *Replica) {
			l := &r.load
			l.Rate, l.PromptMedian, l.PromptSigma, l.OutputMedian, l.OutputSigma, l.MaxTokens = r.scaled(1.8), 4000, 0.4, 1500, 0.4, 2048
			l.PrefixShare = 0.2
		}},
	{Name: "prefill-starvation", Summary: "deployed with --max-num-seqs 48; a batch client starts long generations (1.5k tokens): the decode batch stays full, new prompts wait",
		deploy: func(c *ReplicaConfig) { c.MaxNumSeqs = 48 },
		start: func(r *Replica) {
			l := &r.load
			l.Rate, l.PromptMedian, l.PromptSigma, l.OutputMedian, l.OutputSigma, l.MaxTokens = r.scaled(3), 2000, 0.5, 1500, 0.3, 2048
		}},
	{Name: "swapping", V0Only: true, Summary: "V0 with --gpu-memory-utilization lowered (a ~240k-token KV cache); a best-of-4 feature sends n=4 parallel samples of long answers: V0 swaps preempted groups to CPU",
		deploy: func(c *ReplicaConfig) { c.GPUMemUtil = utilForKV(c.Model, 240_000) },
		start: func(r *Replica) {
			l := &r.load
			l.Rate, l.N, l.NShare, l.PromptMedian, l.OutputMedian, l.OutputSigma, l.MaxTokens = r.scaled(3), 4, 1, 1500, 800, 0.4, 2048
		}},
	{Name: "swapping-v1-help", V0Only: true, Summary: "swapping on a V0 build whose HELP texts are V1's (backported strings): only the metric names say V0",
		deploy: func(c *ReplicaConfig) { c.GPUMemUtil, c.HelpV1 = utilForKV(c.Model, 240_000), true },
		start: func(r *Replica) {
			l := &r.load
			l.Rate, l.N, l.NShare, l.PromptMedian, l.OutputMedian, l.OutputSigma, l.MaxTokens = r.scaled(3), 4, 1, 1500, 800, 0.4, 2048
		}},
	{Name: "memory-leak", Summary: "load stays flat while the API server's resident memory grows 60 MiB/min (and the engine's GPU memory 6 MiB/min)",
		start: func(r *Replica) { r.leakRSS, r.leakGPU, r.leakSince = 1<<20, 0.1*(1<<20), r.now }},
	{Name: "memory-leak-steep", Summary: "load stays flat while the API server's resident memory grows 1.4 GiB/min: out of memory within the hour",
		start: func(r *Replica) { r.leakRSS, r.leakSince = 1.4*(1<<30)/60, r.now }},
	{Name: "engine-stalled", Summary: "the engine hangs mid-step (a NCCL wait, a dead worker): requests keep arriving and stay held, no token is generated, /metrics still answers",
		start: func(r *Replica) {
			for _, e := range r.engines {
				e.hung = true
			}
		}},
	{Name: "gpu-underutilization", Summary: "traffic drops to one request every few seconds: batches of one, the GPU mostly idle",
		start: func(r *Replica) {
			l := &r.load
			l.Rate, l.BurstEvery, l.OutputMedian = r.scaled(0.25), 0, 120
		}},
	{Name: "prefix-cache-miss", Summary: "an agent app with a 2k-token shared system prompt; a client change puts a request id at its top: caching stays on, the prefix cache stops matching",
		deploy: func(c *ReplicaConfig) {
			on := true
			c.PrefixCaching = &on
			c.Load.PrefixShare, c.Load.PrefixLen, c.Load.PrefixGroups = 0.85, 2048, 4
		},
		start: func(r *Replica) { r.load.PrefixUnique = true }},
	{Name: "abort-storm", Summary: "answers get longer while a client with a 4 s timeout retries half of what times out: aborts feed more load",
		start: func(r *Replica) {
			l := &r.load
			l.ClientTimeout, l.RetryShare, l.OutputMedian, l.Rate = 4*time.Second, 0.5, 450, l.Rate*1.5
		}},
	{Name: "abort-storm-llmd", Summary: "abort-storm behind an exporter that spells request_success_total's label finish_reason, as llm-d's simulator does",
		deploy: func(c *ReplicaConfig) { c.FinishReasonLabel = true },
		start: func(r *Replica) {
			l := &r.load
			l.ClientTimeout, l.RetryShare, l.OutputMedian, l.Rate = 4*time.Second, 0.5, 450, l.Rate*1.5
		}},
	{Name: "queue-backlog", Summary: "a failover sends 10× the traffic: more prompts than the engine can prefill, the waiting queue grows",
		start: func(r *Replica) { r.load.Rate *= 10 }},
	{Name: "closed-loop-backlog", Summary: "a benchmark harness replaces the traffic: 400 clients, each sending its next long-document prompt (6k tokens, short answers) when the previous one ends, so arrivals equal completions; prefill bounds the engine long before its batch fills: a standing queue",
		start: func(r *Replica) {
			l := &r.load
			l.Rate, l.BurstEvery, l.Clients, l.ClientTimeout, l.CancelShare = 0, 0, 400, 0, 0
			l.PromptMedian, l.PromptSigma, l.OutputMedian, l.OutputSigma, l.PrefixShare = 6000, 0.3, 32, 0.5, 0
		}},
	{Name: "prompt-over-max-model-len", Summary: "deployed with --max-model-len 8192 to fit its KV cache; a RAG client replaces the chat traffic at the same rate, sending whole documents (5k-token median) with max_tokens 1024, untrimmed: the API server answers every prompt + max_tokens over 8,192 with a 400 that only http_requests_total counts",
		deploy: func(c *ReplicaConfig) { c.Model.MaxModelLen = 8192 },
		start: func(r *Replica) {
			l := &r.load
			l.Untrimmed, l.PromptMedian, l.PromptSigma, l.MaxTokens = true, 5000, 0.6, 1024
		}},
	{Name: "bad-parameter", Summary: "a client release sends a sampling parameter this server refuses on a fifth of its requests: the API server answers them 400; prompts stay chat-sized",
		start: func(r *Replica) { r.load.BadShare = 0.2 }},
	{Name: "stray-bad-requests", Summary: "normal chat traffic with a client that sends a malformed request now and then: 1.5 % answered 400",
		start: func(r *Replica) { r.load.BadShare = 0.015 }},
	{Name: "lora-slots", Summary: "a multi-tenant fine-tune service deployed with --enable-lora --max-loras 2 for its 2 adapters; tenants grow to 8 adapters: requests whose adapter is not loaded wait for a slot while the batch and the KV cache have room",
		deploy: func(c *ReplicaConfig) { c.MaxLoras = 2 },
		start: func(r *Replica) {
			l := &r.load
			l.Adapters, l.Rate, l.BurstEvery = 8, r.scaled(4), 0
		}},
	{Name: "lora-slots-closed", Summary: "lora-slots under a closed-loop harness: 24 clients over 8 adapters, each sending its next request when the previous one ends",
		deploy: func(c *ReplicaConfig) { c.MaxLoras = 2 },
		start: func(r *Replica) {
			l := &r.load
			l.Adapters, l.Rate, l.BurstEvery, l.Clients, l.ClientTimeout, l.CancelShare = 8, 0, 0, 24, 0, 0
		}},
	{Name: "prompt-shift", Summary: "deployed with --max-num-batched-tokens 2048; a document-analysis client replaces the chat traffic: 12k-token prompts with short answers, so every step fills the token budget with prefill chunks and waiting prompts are admitted slowly",
		deploy: func(c *ReplicaConfig) { c.MaxBatchedTokens = 2048 },
		start: func(r *Replica) {
			l := &r.load
			l.Rate, l.BurstEvery, l.PromptMedian, l.PromptSigma, l.OutputMedian, l.OutputSigma, l.PrefixShare = r.scaled(2.4), 0, 12000, 0.2, 40, 0.3, 0
		}},
	{Name: "spec-decode-low-accept", Summary: "deployed with speculative decoding (5 drafted tokens, 85 % accepted each on the code traffic it was tuned for); the traffic turns to busy open-ended chat (2.5× the requests, answers twice as long) where the draft guesses wrong: 10 % accepted, so each step verifies five drafts to keep about one",
		deploy: func(c *ReplicaConfig) { c.SpecTokens, c.SpecAccept = 5, 0.85 },
		start: func(r *Replica) {
			l := &r.load
			l.Rate, l.OutputMedian = l.Rate*2.5, 2*l.OutputMedian
			r.ecfg.specAccept = 0.10
		}},
	{Name: "spec-decode-healthy", Summary: "deployed with speculative decoding (3 drafted tokens, 75 % accepted each) on the traffic it was tuned for, which grows 2.2×: drafts keep paying for themselves; nothing to fix",
		deploy: func(c *ReplicaConfig) { c.SpecTokens, c.SpecAccept = 3, 0.75 },
		start:  func(r *Replica) { r.load.Rate *= 2.2 }},
	{Name: "lora-healthy", Summary: "a multi-tenant fine-tune service deployed with --enable-lora --max-loras 8 for its 6 adapters at chat load: every adapter fits a slot; nothing to fix",
		deploy: func(c *ReplicaConfig) { c.MaxLoras = 8 },
		start: func(r *Replica) {
			l := &r.load
			l.Adapters, l.BurstEvery = 6, 0
		}},
	{Name: "pd-decode", Summary: "the decode side of a prefill/decode pair (--kv-transfer-config NixlConnector): 3k-token prompts are prefilled on a prefill instance and their KV read over a 200 Gb/s RDMA link (about 20 ms each), then decoded here; every read lands",
		deploy: pdDecode, start: func(r *Replica) {}},
	{Name: "kv-transfer-failing", Summary: "pd-decode, then the RDMA link degrades: 40 % of the KV reads fail once UCX's retries give up (1 s), and vLLM recomputes those prompts on the decode instance: their first token waits for the timeout and a local prefill, which lengthens every decode step",
		deploy: pdDecode, start: func(r *Replica) { r.ecfg.xferFail = 0.4 }},
	{Name: "kv-transfer-failing-closed", Summary: "kv-transfer-failing under a closed-loop harness: 24 clients, each sending its next long prompt when the previous answer ends",
		deploy: pdDecode, start: func(r *Replica) {
			l := &r.load
			l.Rate, l.BurstEvery, l.Clients, l.ClientTimeout, l.CancelShare = 0, 0, 24, 0, 0
			r.ecfg.xferFail = 0.4
		}},
	{Name: "batch-job-bursts", Summary: "a periodic batch job on top of chat traffic: bursts of 8× the rate for about 4 s, about every 40 s, each drained within seconds, no preemption",
		start: func(r *Replica) {
			l := &r.load
			l.BurstEvery, l.BurstLen, l.BurstFactor = 40*time.Second, 4*time.Second, 8
		}},
	{Name: "night-trickle", Summary: "night-time traffic: a request every ten seconds or so, no bursts",
		start: func(r *Replica) {
			l := &r.load
			l.Rate, l.BurstEvery = r.scaled(0.1), 0
		}},
	{Name: "idle", Summary: "no traffic at all: the replica waits for requests",
		start: func(r *Replica) { r.load.Rate, r.load.BurstEvery = 0, 0 }},
	{Name: "sleeping", Summary: "the operator puts the engine to sleep (POST /sleep, level 1: weights offloaded) and routes its traffic elsewhere",
		start: func(r *Replica) {
			r.load.Rate, r.load.BurstEvery = 0, 0
			for _, e := range r.engines {
				e.asleep = true
			}
		}},
	{Name: "long-prompts", Summary: "a retrieval feature starts putting documents into every prompt: the prompt median goes from 600 to 4.8k tokens (×8) at the same request rate and answer length",
		start: func(r *Replica) { r.load.PromptMedian *= 8 }},
	{Name: "long-answers", Summary: "a client turns on step-by-step reasoning: the answer median goes from 180 to 720 tokens (×4) at the same request rate",
		start: func(r *Replica) {
			l := &r.load
			l.OutputMedian *= 4
			l.MaxTokens = max(l.MaxTokens, 4*l.OutputMedian)
		}},
	{Name: "short-answers", Summary: "the reasoning client turns step-by-step off: the answer median goes from 180 to 45 tokens (÷4) at the same request rate",
		start: func(r *Replica) { r.load.OutputMedian = max(1, r.load.OutputMedian/4) }},
	{Name: "hot-replica", Summary: "the router pins a large tenant's sessions to this replica (sticky sessions, or prefix affinity without a load bound): 8× the chat traffic here while its peers keep theirs; more than this engine serves, far less than the pool does",
		start: func(r *Replica) { r.load.Rate *= 8 }},
	{Name: "runaway-answers", Summary: "an upgrade's chat template drops the model's end-of-turn token from the stop set: two answers in five never end on their own and run on, repeating themselves, to max_tokens (1,024); arrivals and prompts unchanged",
		start: func(r *Replica) { r.load.NoStop = 0.4 }},
	{Name: "max-tokens-lowered", Summary: "a client release caps chat answers at max_tokens 128 to save cost: answers longer than that end at the limit, the output mean falls; a change of what clients ask, not a fault",
		start: func(r *Replica) { r.load.MaxTokens = 128 }},
	{Name: "traffic-drop", Summary: "a client moves to another region: traffic falls to 1/2.2 (bursts as before)",
		start: func(r *Replica) { r.load.Rate /= 2.2 }},
	{Name: "restart", Summary: "the vLLM process restarts: the port refuses connections for 20 s while the model loads, then every counter starts from zero",
		start: func(r *Replica) { r.restartAt = r.now },
		down:  func(d time.Duration) bool { return d < restartDown }},
	{Name: "redeploy-less-kv", Summary: "a deploy restarts the engine with --gpu-memory-utilization lowered to make room for an embedding model on the same GPU: it comes back with a KV cache of about 20k tokens (the 8B had 430k); the chat traffic returns to a cache that holds it only between bursts",
		start: func(r *Replica) { r.restartAt, r.redeployUtil = r.now, utilForKV(r.cfg.Model, 20_000) },
		down:  func(d time.Duration) bool { return d < restartDown }},
	{Name: "crash-loop", Summary: "a bad deploy leaks the API server's memory fast (3 GiB in 40 s of serving): the kernel's OOM killer ends it at its memory limit (about 4 GiB), the supervisor starts it again, 20 s of model loading, and again: a restart every minute, memory climbing before each",
		start: func(r *Replica) {
			r.crashLoop = true
			r.leakRSS, r.leakSince = crashHeadroom/crashUp.Seconds(), r.now
			r.restartAt = r.now + crashUp
		},
		// Up for crashUp (the leak reaching the limit), down for the
		// model load, every cycle: the schedule is the mechanism's.
		down: func(d time.Duration) bool { return d >= crashUp && (d-crashUp)%(crashUp+restartDown) < restartDown }},
	{Name: "flapping", Summary: "the endpoint drops off the network for 20 s of every minute and comes back; the engine keeps its state",
		start: func(r *Replica) {},
		down:  func(d time.Duration) bool { return d%flapPeriod < flapDown }},
	{Name: "thermal-throttle", Summary: "busy traffic (2.2×) while the cooling degrades: the GPU reaches its slowdown temperature, clocks halve and every step takes longer",
		start: func(r *Replica) {
			r.load.Rate *= 2.2
			for _, e := range r.engines {
				e.gpu.ambientC, e.gpu.cwPerWatt = 42, 0.17
			}
		}},
}

// pdDecode deploys the decode side of P/D disaggregation: long prompts
// (what P/D is deployed for), prefilled elsewhere, no shared prefixes.
func pdDecode(c *ReplicaConfig) {
	c.PDDecode = true
	l := c.Load
	l.PromptMedian, l.PromptSigma, l.OutputMedian, l.OutputSigma, l.PrefixShare = 3000, 0.3, 250, 0.5, 0
}

// utilForKV is the --gpu-memory-utilization (two decimals, as operators
// write it) that leaves a KV cache of about tokens for model m.
func utilForKV(m Model, tokens float64) float64 {
	if m.Name == "" {
		m = Models[0]
	}
	u := (tokens*m.KVBytesPerToken + m.WeightBytes + gpuReserveBytes) / gpuMemTotal
	return math.Min(0.95, math.Round(u*100)/100)
}

const (
	restartDown = 20 * time.Second
	// crash-loop: the leak fills crashHeadroom above the process's
	// baseline in crashUp of serving, where its memory limit kills it.
	crashUp       = 40 * time.Second
	crashHeadroom = 3 << 30
	flapPeriod    = time.Minute
	flapDown      = 20 * time.Second
)

// LookupScenario finds a scenario by name.
func LookupScenario(name string) (*Scenario, error) {
	for i := range Scenarios {
		if Scenarios[i].Name == name {
			return &Scenarios[i], nil
		}
	}
	return nil, fmt.Errorf("unknown scenario %q (have %s)", name, ScenarioNames())
}

// ScenarioNames lists the scenario names for messages.
func ScenarioNames() string {
	var names []string
	for _, s := range Scenarios {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

// ScenarioSpec is a scenario to start after Delay of simulated time.
type ScenarioSpec struct {
	Name  string
	Delay time.Duration
}

func (s ScenarioSpec) String() string {
	if s.Delay == 0 {
		return s.Name
	}
	return s.Name + "@" + s.Delay.String()
}

// ParseScenarios reads NAME[@DELAY] specs joined with '+', e.g.
// "busy+kv-thrashing@2m" (busy from the start, thrashing after two minutes).
func ParseScenarios(s string) ([]ScenarioSpec, error) {
	var out []ScenarioSpec
	for _, part := range strings.Split(s, "+") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("empty scenario in %q", s)
		}
		name, delay, hasDelay := strings.Cut(part, "@")
		spec := ScenarioSpec{Name: strings.TrimSpace(name)}
		if _, err := LookupScenario(spec.Name); err != nil {
			return nil, err
		}
		if hasDelay {
			d, err := time.ParseDuration(strings.TrimSpace(delay))
			if err != nil || d < 0 {
				return nil, fmt.Errorf("scenario %q: delay must be a duration like 90s or 2m", part)
			}
			spec.Delay = d
		}
		out = append(out, spec)
	}
	return out, nil
}

// check rejects scenarios the replica's generation cannot show.
func (s *Scenario) check(p *Profile) error {
	if s.V0Only && p.Gen != sources.GenV0 {
		return fmt.Errorf("scenario %s needs a V0 engine (--version v0.6): V1 never swaps to CPU", s.Name)
	}
	return nil
}
