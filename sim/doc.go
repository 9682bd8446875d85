// Package sim is vtop's built-in vLLM fleet simulator: `vtop --demo`,
// `vtop sim`, and the endpoints every test, benchmark and diagnosis rule
// runs against.
//
// # The model
//
// Each replica is a vLLM API server in front of one engine, or several with
// data parallelism (requests go to the engine with the least work). An
// engine is a scheduler over a paged KV cache: requests arrive (Poisson,
// with bursts), wait, are admitted up to --max-num-seqs and the token budget
// --max-num-batched-tokens, prefill in chunks (V1) or whole (V0), then decode
// one token per step; a step takes longer with more sequences, more context
// and more prompt tokens. Requests hold KV blocks that grow with their
// length; when none are left the newest running request is preempted
// (recomputed in V1, swapped to CPU for parallel samples in V0). Shared
// system prompts are served from a prefix cache with LRU eviction. Requests
// finish by stop or length, or the client gives up (timeouts, cancels) and
// may retry. Every latency the exposition reports (TTFT, inter-token, E2E,
// queue, prefill, decode) is measured on this model, so the numbers hang
// together as on a real server. Runs of identical decode steps are
// simulated as one, so a replica costs little CPU however long it runs.
//
// Each engine also has a simulated GPU (sources.GPUSource via Fleet.GPUs):
// utilization is the time the engine kept it busy, memory is what
// --gpu-memory-utilization reserves, power and temperature follow the work,
// and clocks drop at the power limit or the slowdown temperature, which
// slows the engine down. Readings are always marked Simulated.
//
// # The exposition
//
// /metrics is generated from sources.Metrics for one vLLM generation
// (Profiles: v0.6 = V0 0.6.6, v0.10 = V1 0.10.1, v0.11 = V1 0.11.0, latest =
// V1 0.20.2): the families that release shows by default, with its help
// texts, types, label names and bucket layouts; _created series and process
// collectors only where prometheus_client runs its single-process registry
// (not V0, not V1 ≥0.15 with data parallelism); an engine label on V1;
// cache_config_info with that release's CacheConfig fields. Text 0.0.4 by
// default, OpenMetrics when the Accept header asks for it, gzip when
// accepted, as prometheus_client serves it. Tests compare the v0.10 and
// v0.11 output with the full captures in testdata/dumps family by family.
//
// # Scenarios
//
// A scenario changes what production changes, never a symptom: the
// replica's deployment (flags such as --max-num-seqs or
// --gpu-memory-utilization, its usual traffic) from the start, and its
// traffic or environment from its start time, NAME@DELAY of simulated time.
// Request rates are set for the reference model (Models[0]) and scaled to
// a slower model's speed, so a scenario means the same state on either:
//
//	healthy               chat traffic at moderate load
//	busy                  traffic ×2.2, bigger batches, still within targets
//	kv-thrashing          a ~200k-token KV cache (lower --gpu-memory-utilization), then 4k-token documents with 1.5k-token answers
//	prefill-starvation    --max-num-seqs 48, then long generations fill the batch; prompts wait
//	swapping              (V0 only) n=4 parallel samples of long answers: groups swapped to CPU
//	memory-leak           the API server's RSS grows 60 MiB/min (GPU memory 6 MiB/min), load flat
//	gpu-underutilization  traffic falls to one request every few seconds
//	prefix-cache-miss     a 2k-token shared system prompt stops matching (a request id at its top)
//	abort-storm           longer answers, 4 s client timeout, half the timeouts retried
//	queue-backlog         a failover sends 10× the traffic
//	long-prompts          the prompt median ×8 (documents in every prompt), same request rate
//	long-answers          the answer median ×4 (step-by-step reasoning), same request rate
//	short-answers         the answer median ÷4 (step-by-step turned off), same request rate
//	traffic-drop          traffic falls to 1/2.2 (a client moves away)
//	runaway-answers       2 answers in 5 no longer end on their own: they run to max_tokens (a template change)
//	max-tokens-lowered    the clients cap answers at max_tokens 128: more end at the limit, shorter (traffic)
//	hot-replica           the router pins a tenant's sessions here: 8× the chat traffic, peers unchanged
//	prompt-over-max-model-len  --max-model-len 8192, then untrimmed 5k-token documents: ~30 % answered 400 (http_requests_total only)
//	bad-parameter         a fifth of requests carry a parameter the server refuses: answered 400, prompts chat-sized
//	stray-bad-requests    1.5 % of requests malformed, answered 400 (normal life)
//	restart               the process restarts: 20 s refusing connections, counters from zero
//	spec-decode-healthy   3 drafted tokens, 75 % accepted, busy traffic (quiet)
//	lora-healthy          6 adapters within --max-loras 8 (quiet)
//	redeploy-less-kv      a restart with --gpu-memory-utilization lowered: a KV cache of ~20k tokens, chat traffic
//	crash-loop            OOM-killed at its memory limit every 40 s of serving, restarted by its supervisor: a restart a minute
//	flapping              off the network 20 s of every minute; the engine keeps going
//	thermal-throttle      busy traffic while cooling degrades: clocks halve at 87 °C
//
// # In-process use (tests, the rules engine)
//
// A Fleet never reads the clock: it moves when told, so minutes of load run
// in milliseconds, and the same config and seed give the same bytes.
//
//	f, _ := sim.NewFleet(sim.FleetConfig{Replicas: []sim.ReplicaConfig{
//		{Scenarios: []sim.ScenarioSpec{{Name: "kv-thrashing", Delay: 30 * time.Second}}},
//	}}, seed)
//	norm := sources.NewNormalizer()               // one per replica, reused
//	eng := diagnose.New(diagnose.Config{}, infos)
//	for range 240 {
//		f.Advance(time.Second)
//		eng.Ingest(0, f.Replicas()[0].Scrape(norm, sim.FormatOpenMetrics))
//	}
//	frame := eng.Frame(f.Now())                   // Stats show the thrashing
//
// Replica.Scrape times the scrape at the simulated now and fails it with
// "connection refused" while the replica is down; Replica.Exposition
// returns the bytes; Fleet.GPUs samples the simulated GPUs; Replica.State is
// the model's ground truth.
//
// # Serving (vtop sim, vtop --demo)
//
// Serve puts each replica on its own loopback port (loopback only; the
// simulator never faces a network) and makes the fleet follow the wall
// clock: a replica runs up to the present when it is scraped. Ports close
// while a scenario takes an endpoint down, dropping open connections, and
// reopen when it comes back.
//
//	vtop sim --listen 127.0.0.1:8000 --replicas 8 --scenario healthy --scenario kv-thrashing@1m
//
// serves replicas 0, 2, 4, 6 healthy and 1, 3, 5, 7 thrashing after a
// minute on ports 8000–8007. --version picks the generation, --models the
// served names (round-robin), --dp the engines per replica, --seed the
// traffic; one startup line lists the URLs; SIGINT or SIGTERM stops it.
package sim
