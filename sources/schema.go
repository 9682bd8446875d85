package sources

// This file is the one place that spells metric names. Every name vLLM has
// exposed on /metrics since 0.3, each alias across releases, and the help text
// and bucket layout of each release, live in the Metrics table below, beside
// SGLang's names for the same canonical signals (the Server column) and the
// prefixes re-exporters put on them (Spellings); the parser, the engine and
// version detectors and the simulator all read it.
// Facts come from ../shared/vllm-metrics/CATALOG.md (built from vLLM's tagged
// sources) and the captured dumps in testdata/dumps.

// Gauge is a canonical point-in-time signal of one engine/model sub-series.
type Gauge uint8

const (
	GRunning          Gauge = iota // requests in the running batch
	GWaiting                       // requests waiting (V1 ≥0.20: capacity + deferred)
	GSwapped                       // V0: requests swapped to CPU
	GKVUsage                       // GPU KV-cache usage, 0..1
	GCPUKVUsage                    // V0: CPU (swap) KV-cache usage, 0..1
	GPrefixHitRateGPU              // V0: prefix-cache block hit rate gauge, -1 when caching is off
	GPrefixHitRateCPU              // V0: CPU prefix-cache block hit rate gauge
	GAvgPromptTput                 // V0 ≤0.6.6: engine-computed prompt tokens/s
	GAvgGenTput                    // V0 ≤0.6.6: engine-computed generation tokens/s
	GSpecAcceptRate                // V0: speculative acceptance rate gauge
	GPaused                        // engine paused (engine_pause_state > 0)
	GSpecAcceptLen                 // SGLang: mean tokens accepted per speculative step
	GKVTokensMax                   // SGLang: tokens the KV pool holds (max_total_num_tokens)
	NumGauges
)

// Counter is a canonical monotonically increasing signal of one sub-series.
type Counter uint8

const (
	CPromptTokens Counter = iota
	CGenTokens
	CPreemptions
	CPrefixQueries // tokens (blocks before 0.9.0)
	CPrefixHits
	CExtPrefixQueries
	CExtPrefixHits
	CMMCacheQueries
	CMMCacheHits
	CPromptCached
	CPromptRecomputed
	CSpecDrafts
	CSpecDraftTokens
	CSpecAccepted
	CKVTransferFailed // P/D: KV transfers that failed (NIXL, SGLang's transfer queue)
	CKVExpired        // P/D: requests whose transferred KV expired before use (NIXL ≥0.15)
	CKVOffloadBytes   // KV offload to and from CPU, bytes (≥0.16, by transfer_type until 0.24)
	NumCounters
)

// Hist is a canonical histogram of one sub-series.
type Hist uint8

const (
	HTTFT              Hist = iota // time to first token, s
	HITL                           // inter-token latency, s
	HTPOT                          // mean time per output token per request, s
	HE2E                           // end-to-end request latency, s
	HQueue                         // time in WAITING, s
	HPrefill                       // time in PREFILL, s
	HDecode                        // time in DECODE, s
	HInference                     // time in RUNNING, s
	HPromptLen                     // prompt tokens per request
	HGenLen                        // generated tokens per request
	HIterTokens                    // tokens per engine step (batch-size proxy)
	HMaxGenTokens                  // requested max generation tokens
	HParamsN                       // request n
	HParamsMaxTokens               // request max_tokens
	HParamsBestOf                  // request best_of (V0 ≤0.6.2)
	HPrefillKVComputed             // new KV tokens computed per request
	HKVBlockLifetime               // --kv-cache-metrics
	HKVBlockIdleEvict              // --kv-cache-metrics
	NumHists
)

// Labeled is a canonical family split by one extra label (finished_reason, …).
type Labeled uint8

const (
	LFinished          Labeled = iota // counter by finished_reason
	LWaitingReason                    // gauge by reason (capacity / deferred)
	LPromptSource                     // counter by source (local_compute / local_cache_hit / external_kv_transfer)
	LSleepState                       // gauge by sleep_state
	LAdmissionRejected                // counter by reason (the admission cap that rejected)
	LSpecAcceptedPos                  // counter by position: drafts accepted at each position (≥0.8.5)
	NumLabeled
)

// Proc is an endpoint-level process metric (prometheus_client's default collectors).
type Proc uint8

const (
	PRSS Proc = iota
	PVirtual
	PStartTime
	PCPUSeconds // counter
	POpenFDs
	PMaxFDs
	NumProcs
)

// Kind is the exposition type of a metric family.
type Kind uint8

const (
	KindGauge Kind = iota
	KindCounter
	KindHistogram
	KindInfo
)

func (k Kind) String() string {
	return [...]string{"gauge", "counter", "histogram", "gauge"}[k]
}

// Server is a serving engine: whose names a table row spells.
type Server uint8

const (
	ServerVLLM Server = iota
	ServerSGLang
	NumServers
)

// ServerInfo is what the table knows of an engine beyond its rows.
type ServerInfo struct {
	Name string // as the screen says it
	// EngineLabel numbers the data-parallel engines of one server: vLLM's
	// engine, SGLang's dp_rank (absent without data parallelism).
	EngineLabel string
}

// Servers is indexed by Server.
var Servers = [NumServers]ServerInfo{
	ServerVLLM:   {Name: "vLLM", EngineLabel: LabelEngine},
	ServerSGLang: {Name: "SGLang", EngineLabel: "dp_rank"},
}

func (s Server) String() string {
	if s < NumServers {
		return Servers[s].Name
	}
	return "unknown"
}

// Spelling is a prefix under which an engine's families also appear: a
// re-export or a renaming. Every family whose name starts with Table reads
// under Wire+rest as well.
type Spelling struct {
	Wire, Table string
	By          string // who writes it, for the endpoint's line
}

// Spellings are the prefix aliases. The unprefixed row is NVIDIA NIM's
// /v1/metrics, which serves vLLM's families without vllm:.
var Spellings = []Spelling{
	{Wire: "ray_vllm:", Table: VLLMPrefix, By: "Ray Serve LLM"},
	{Wire: "vllm_omni:", Table: VLLMPrefix, By: "vLLM-Omni"},
	{Wire: "sglang_", Table: SGLangPrefix, By: "SGLang (sglang_ builds, SMG router)"},
	{Wire: "", Table: VLLMPrefix, By: "NVIDIA NIM"},
}

// Role says what a table row feeds.
type Role uint8

const (
	RoleGauge     Role = iota // ID is a Gauge
	RoleCounter               // ID is a Counter
	RoleHist                  // ID is a Hist
	RoleLabeled               // ID is a Labeled
	RoleProc                  // ID is a Proc
	RoleCacheInfo             // vllm:cache_config_info
	RoleLoraInfo              // vllm:lora_requests_info
	RoleRouter                // a router's metric (production-stack, Dynamo's frontend): the target is a router, not an engine
	// RoleHTTP is the API server's responses by status (Label), an
	// endpoint's own counter with no model or engine label: every
	// FastAPI app may serve it, so it never marks a target as vLLM.
	RoleHTTP
)

// RouterValue is a number a router serves per model (the ID of a
// RoleRouter row; RNone for a row that only marks a router).
type RouterValue uint8

const (
	RNone       RouterValue = iota
	RQueued                 // requests of the model it holds that have no first token yet (Dynamo counts those waiting in workers too)
	RInflight               // requests of the model in flight through it
	RMaxNumSeqs             // --max-num-seqs of each worker serving the model
	NumRouterValues
)

// Buckets names a bucket layout; the layouts per release are in bucketLayouts.
type Buckets uint8

const (
	BNone Buckets = iota
	BTTFT
	BITL
	BLatency // request_latency_buckets (e2e, queue, prefill, decode, inference)
	B125     // 1-2-5 series up to max_model_len
	BIter
	BParamsN
	BKVResidency
	BSGLangTTFT  // SGLang's own layouts (TokenizerMetricsCollector defaults)
	BSGLangITL   //
	BSGLangE2E   //
	BSGLangQueue // SchedulerMetricsCollector's queue_time_seconds
)

// Metric is one row of the table: a family name as vLLM defines it, in one
// engine generation, over one span of releases.
type Metric struct {
	// Server is the serving engine whose family this is (zero: vLLM).
	Server Server
	Name   string // family name; counters without the _total suffix
	Kind   Kind
	Role   Role
	ID     uint8
	Rank   uint8 // among names feeding the same signal, the lowest present wins
	Gen    Gen   // GenUnknown: both generations
	Since  Version
	Shown  Version // last release that exposes it by default (zero: still shown)
	Last   Version // last release whose code defines it (zero: still defined)
	Label  string  // the extra label of a Labeled family
	// LabelAlt is another spelling of Label that other exporters use
	// (llm-d's simulator writes finish_reason); Label wins when both are
	// there.
	LabelAlt string
	Bucket   Buckets
	// Optional marks families that exist only with a flag or feature
	// (speculative decoding, LoRA, --kv-cache-metrics); the simulator leaves
	// them out and the version detector still uses them.
	Optional bool
	Help     string
}

// Label names that structure sub-series.
const (
	LabelModel    = "model_name"
	LabelModelAlt = "model" // Triton's vLLM backend re-exports with model/version
	LabelEngine   = "engine"
	LabelPID      = "pid"
	LabelLe       = "le"
	LabelFinished = "finished_reason"
	// LabelFinishedAlt is llm-d inference simulator's spelling.
	LabelFinishedAlt = "finish_reason"
	LabelReason      = "reason"
	LabelSource      = "source"
	LabelSleep       = "sleep_state"
	LabelMaxLora     = "max_lora"
	LabelRunLora     = "running_lora_adapters"
	LabelWaitLora    = "waiting_lora_adapters"
	LabelPosition    = "position"
	LabelTransfer    = "transfer_type"
	LabelHandler     = "handler"
	LabelStatus      = "status"
	VLLMPrefix       = "vllm:"
	SGLangPrefix     = "sglang:"
	helpV1Running    = "Number of requests in model execution batches."
	helpV0Running    = "Number of requests currently running on GPU."
	helpKV           = "KV-cache usage. 1 means 100 percent usage."
	helpGPUKV        = "GPU KV-cache usage. 1 means 100 percent usage."
	helpPromptToks   = "Number of prefill tokens processed."
	helpGenToks      = "Number of generation tokens processed."
)

// Metrics is the table. Rows with the same Role and ID are aliases; Rank
// orders them (0 = the current name).
var Metrics = []Metric{
	// Scheduler state.
	{Name: "vllm:num_requests_running", Kind: KindGauge, Role: RoleGauge, ID: uint8(GRunning), Gen: GenV0, Since: V(0, 2, 3), Last: V(0, 11, 0), Help: helpV0Running},
	{Name: "vllm:num_requests_running", Kind: KindGauge, Role: RoleGauge, ID: uint8(GRunning), Gen: GenV1, Since: V(0, 7, 1), Help: helpV1Running},
	{Name: "vllm:num_requests_waiting", Kind: KindGauge, Role: RoleGauge, ID: uint8(GWaiting), Since: V(0, 2, 3), Help: "Number of requests waiting to be processed."},
	{Name: "vllm:num_requests_waiting_by_reason", Kind: KindGauge, Role: RoleLabeled, ID: uint8(LWaitingReason), Label: LabelReason, Gen: GenV1, Since: V(0, 20, 0), Help: "Number of requests waiting to be processed, by reason. Sum of all reasons equals vllm:num_requests_waiting."},
	{Name: "vllm:num_requests_swapped", Kind: KindGauge, Role: RoleGauge, ID: uint8(GSwapped), Gen: GenV0, Since: V(0, 2, 3), Shown: V(0, 8, 2), Last: V(0, 9, 0), Help: "Number of requests swapped to CPU."},

	// KV cache.
	{Name: "vllm:kv_cache_usage_perc", Kind: KindGauge, Role: RoleGauge, ID: uint8(GKVUsage), Gen: GenV1, Since: V(0, 9, 2), Help: helpKV},
	{Name: "vllm:gpu_cache_usage_perc", Kind: KindGauge, Role: RoleGauge, ID: uint8(GKVUsage), Rank: 1, Gen: GenV0, Since: V(0, 2, 3), Last: V(0, 11, 0), Help: helpGPUKV},
	{Name: "vllm:gpu_cache_usage_perc", Kind: KindGauge, Role: RoleGauge, ID: uint8(GKVUsage), Rank: 1, Gen: GenV1, Since: V(0, 7, 1), Shown: V(0, 9, 1), Last: V(0, 9, 1), Help: helpGPUKV},
	{Name: "vllm:gpu_cache_usage_perc", Kind: KindGauge, Role: RoleGauge, ID: uint8(GKVUsage), Rank: 1, Gen: GenV1, Since: V(0, 9, 2), Shown: V(0, 10, 2), Last: V(0, 11, 2), Help: helpGPUKV + "DEPRECATED: Use vllm:kv_cache_usage_perc instead."},
	{Name: "vllm:cpu_cache_usage_perc", Kind: KindGauge, Role: RoleGauge, ID: uint8(GCPUKVUsage), Gen: GenV0, Since: V(0, 2, 3), Shown: V(0, 8, 2), Last: V(0, 9, 0), Help: "CPU KV-cache usage. 1 means 100 percent usage."},
	{Name: "vllm:gpu_prefix_cache_hit_rate", Kind: KindGauge, Role: RoleGauge, ID: uint8(GPrefixHitRateGPU), Gen: GenV0, Since: V(0, 5, 5), Shown: V(0, 8, 2), Last: V(0, 9, 0), Help: "GPU prefix cache block hit rate."},
	{Name: "vllm:cpu_prefix_cache_hit_rate", Kind: KindGauge, Role: RoleGauge, ID: uint8(GPrefixHitRateCPU), Gen: GenV0, Since: V(0, 5, 5), Shown: V(0, 8, 2), Last: V(0, 9, 0), Help: "CPU prefix cache block hit rate."},
	{Name: "vllm:prefix_cache_queries", Kind: KindCounter, Role: RoleCounter, ID: uint8(CPrefixQueries), Gen: GenV1, Since: V(0, 9, 2), Help: "Prefix cache queries, in terms of number of queried tokens."},
	{Name: "vllm:prefix_cache_hits", Kind: KindCounter, Role: RoleCounter, ID: uint8(CPrefixHits), Gen: GenV1, Since: V(0, 9, 2), Help: "Prefix cache hits, in terms of number of cached tokens."},
	{Name: "vllm:gpu_prefix_cache_queries", Kind: KindCounter, Role: RoleCounter, ID: uint8(CPrefixQueries), Rank: 1, Gen: GenV1, Since: V(0, 7, 3), Last: V(0, 8, 5), Help: "GPU prefix cache queries, in terms of number of queried blocks."},
	{Name: "vllm:gpu_prefix_cache_hits", Kind: KindCounter, Role: RoleCounter, ID: uint8(CPrefixHits), Rank: 1, Gen: GenV1, Since: V(0, 7, 3), Last: V(0, 8, 5), Help: "GPU prefix cache hits, in terms of number of cached blocks."},
	{Name: "vllm:gpu_prefix_cache_queries", Kind: KindCounter, Role: RoleCounter, ID: uint8(CPrefixQueries), Rank: 1, Gen: GenV1, Since: V(0, 9, 0), Shown: V(0, 10, 2), Last: V(0, 11, 2), Help: "GPU prefix cache queries, in terms of number of queriedtokens. DEPRECATED: Use vllm:prefix_cache_queries instead."},
	{Name: "vllm:gpu_prefix_cache_hits", Kind: KindCounter, Role: RoleCounter, ID: uint8(CPrefixHits), Rank: 1, Gen: GenV1, Since: V(0, 9, 0), Shown: V(0, 10, 2), Last: V(0, 11, 2), Help: "GPU prefix cache hits, in terms of number of cached tokens. DEPRECATED: Use vllm:prefix_cache_hits instead."},
	{Name: "vllm:external_prefix_cache_queries", Kind: KindCounter, Role: RoleCounter, ID: uint8(CExtPrefixQueries), Gen: GenV1, Since: V(0, 11, 1), Help: "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens."},
	{Name: "vllm:external_prefix_cache_hits", Kind: KindCounter, Role: RoleCounter, ID: uint8(CExtPrefixHits), Gen: GenV1, Since: V(0, 11, 1), Help: "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens."},
	{Name: "vllm:mm_cache_queries", Kind: KindCounter, Role: RoleCounter, ID: uint8(CMMCacheQueries), Gen: GenV1, Since: V(0, 11, 1), Help: "Multi-modal cache queries, in terms of number of queried items."},
	{Name: "vllm:mm_cache_hits", Kind: KindCounter, Role: RoleCounter, ID: uint8(CMMCacheHits), Gen: GenV1, Since: V(0, 11, 1), Help: "Multi-modal cache hits, in terms of number of cached items."},
	{Name: "vllm:num_preemptions", Kind: KindCounter, Role: RoleCounter, ID: uint8(CPreemptions), Gen: GenV0, Since: V(0, 4, 3), Last: V(0, 11, 0), Help: "Cumulative number of preemption from the engine."},
	{Name: "vllm:num_preemptions", Kind: KindCounter, Role: RoleCounter, ID: uint8(CPreemptions), Gen: GenV1, Since: V(0, 8, 0), Help: "Cumulative number of preemption from the engine."},
	{Name: "vllm:cache_config_info", Kind: KindInfo, Role: RoleCacheInfo, Since: V(0, 3, 3), Help: "Information of the LLMEngine CacheConfig"},
	// Named in issue 9 as a paused engine's signal; not in CATALOG.md's
	// captures, so its layout is an assumption (non-zero: paused) and it
	// bounds no release.
	{Name: "vllm:engine_pause_state", Kind: KindGauge, Role: RoleGauge, ID: uint8(GPaused), Gen: GenV1, Optional: true, Help: "Engine pause state; 1 means generation is paused."},
	// CATALOG.md: listed first in the v0.32.0 metrics docs (PR #55812); its
	// reasons name the cap (max_num_queued_reqs / max_num_queued_tokens).
	{Name: "vllm:admission_rejections", Kind: KindCounter, Role: RoleLabeled, ID: uint8(LAdmissionRejected), Label: LabelReason, Gen: GenV1, Since: V(0, 32, 0), Optional: true, Help: "Number of requests rejected at admission, by reason."},
	{Name: "vllm:engine_sleep_state", Kind: KindGauge, Role: RoleLabeled, ID: uint8(LSleepState), Label: LabelSleep, Gen: GenV1, Since: V(0, 11, 1), Help: "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2."},
	// V0 logs the LoRA gauge on every stats interval (max_lora="0" without
	// LoRA); V1 registers it only when LoRA is enabled.
	{Name: "vllm:lora_requests_info", Kind: KindGauge, Role: RoleLoraInfo, Gen: GenV0, Since: V(0, 6, 4), Last: V(0, 11, 0), Help: "Running stats on lora requests."},
	{Name: "vllm:lora_requests_info", Kind: KindGauge, Role: RoleLoraInfo, Gen: GenV1, Since: V(0, 8, 0), Optional: true, Help: "Running stats on lora requests."},

	// Tokens and requests.
	{Name: "vllm:prompt_tokens", Kind: KindCounter, Role: RoleCounter, ID: uint8(CPromptTokens), Since: V(0, 3, 1), Help: helpPromptToks},
	{Name: "vllm:generation_tokens", Kind: KindCounter, Role: RoleCounter, ID: uint8(CGenTokens), Since: V(0, 3, 1), Help: helpGenToks},
	{Name: "vllm:prompt_tokens_by_source", Kind: KindCounter, Role: RoleLabeled, ID: uint8(LPromptSource), Label: LabelSource, Gen: GenV1, Since: V(0, 16, 0), Help: "Number of prompt tokens by source."},
	{Name: "vllm:prompt_tokens_cached", Kind: KindCounter, Role: RoleCounter, ID: uint8(CPromptCached), Gen: GenV1, Since: V(0, 16, 0), Help: "Number of cached prompt tokens (local + external)."},
	{Name: "vllm:prompt_tokens_recomputed", Kind: KindCounter, Role: RoleCounter, ID: uint8(CPromptRecomputed), Gen: GenV1, Since: V(0, 16, 0), Last: V(0, 19, 1), Help: "Number of prompt tokens recomputed."},
	{Name: "vllm:request_success", Kind: KindCounter, Role: RoleLabeled, ID: uint8(LFinished), Label: LabelFinished, LabelAlt: LabelFinishedAlt, Gen: GenV0, Since: V(0, 4, 2), Last: V(0, 11, 0), Help: "Count of successfully processed requests."},
	{Name: "vllm:request_success", Kind: KindCounter, Role: RoleLabeled, ID: uint8(LFinished), Label: LabelFinished, LabelAlt: LabelFinishedAlt, Gen: GenV1, Since: V(0, 7, 2), Help: "Count of successfully processed requests."},
	{Name: "vllm:avg_prompt_throughput_toks_per_s", Kind: KindGauge, Role: RoleGauge, ID: uint8(GAvgPromptTput), Gen: GenV0, Since: V(0, 2, 3), Last: V(0, 6, 6), Help: "Average prefill throughput in tokens/s."},
	{Name: "vllm:avg_generation_throughput_toks_per_s", Kind: KindGauge, Role: RoleGauge, ID: uint8(GAvgGenTput), Gen: GenV0, Since: V(0, 2, 3), Last: V(0, 6, 6), Help: "Average generation throughput in tokens/s."},

	// Latency histograms.
	{Name: "vllm:time_to_first_token_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HTTFT), Since: V(0, 3, 1), Bucket: BTTFT, Help: "Histogram of time to first token in seconds."},
	{Name: "vllm:inter_token_latency_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HITL), Since: V(0, 10, 2), Bucket: BITL, Help: "Histogram of inter-token latency in seconds."},
	{Name: "vllm:time_per_output_token_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HITL), Rank: 1, Since: V(0, 3, 1), Last: V(0, 10, 1), Bucket: BITL, Help: "Histogram of time per output token in seconds."},
	{Name: "vllm:time_per_output_token_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HITL), Rank: 1, Gen: GenV1, Since: V(0, 10, 2), Shown: V(0, 11, 2), Last: V(0, 14, 1), Bucket: BITL, Help: "Histogram of time per output token in seconds.DEPRECATED: Use vllm:inter_token_latency_seconds instead."},
	{Name: "vllm:request_time_per_output_token_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HTPOT), Gen: GenV1, Since: V(0, 11, 0), Bucket: BITL, Help: "Histogram of time_per_output_token_seconds per request."},
	{Name: "vllm:e2e_request_latency_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HE2E), Gen: GenV0, Since: V(0, 3, 1), Last: V(0, 11, 0), Bucket: BLatency, Help: "Histogram of end to end request latency in seconds."},
	{Name: "vllm:e2e_request_latency_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HE2E), Gen: GenV1, Since: V(0, 7, 3), Bucket: BLatency, Help: "Histogram of e2e request latency in seconds."},
	{Name: "vllm:request_queue_time_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HQueue), Since: V(0, 6, 4), Bucket: BLatency, Help: "Histogram of time spent in WAITING phase for request."},
	{Name: "vllm:time_in_queue_requests", Kind: KindHistogram, Role: RoleHist, ID: uint8(HQueue), Rank: 1, Gen: GenV0, Since: V(0, 6, 4), Shown: V(0, 8, 2), Last: V(0, 9, 0), Bucket: BLatency, Help: "Histogram of time the request spent in the queue in seconds."},
	{Name: "vllm:request_inference_time_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HInference), Since: V(0, 6, 4), Bucket: BLatency, Help: "Histogram of time spent in RUNNING phase for request."},
	{Name: "vllm:request_prefill_time_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HPrefill), Since: V(0, 6, 4), Bucket: BLatency, Help: "Histogram of time spent in PREFILL phase for request."},
	{Name: "vllm:request_decode_time_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HDecode), Since: V(0, 6, 4), Bucket: BLatency, Help: "Histogram of time spent in DECODE phase for request."},

	// Request shape histograms.
	{Name: "vllm:request_prompt_tokens", Kind: KindHistogram, Role: RoleHist, ID: uint8(HPromptLen), Since: V(0, 4, 2), Bucket: B125, Help: helpPromptToks},
	{Name: "vllm:request_generation_tokens", Kind: KindHistogram, Role: RoleHist, ID: uint8(HGenLen), Since: V(0, 4, 2), Bucket: B125, Help: helpGenToks},
	{Name: "vllm:iteration_tokens_total", Kind: KindHistogram, Role: RoleHist, ID: uint8(HIterTokens), Since: V(0, 6, 4), Bucket: BIter, Help: "Histogram of number of tokens per engine_step."},
	{Name: "vllm:request_max_num_generation_tokens", Kind: KindHistogram, Role: RoleHist, ID: uint8(HMaxGenTokens), Since: V(0, 6, 4), Bucket: B125, Help: "Histogram of maximum number of requested generation tokens."},
	{Name: "vllm:request_params_n", Kind: KindHistogram, Role: RoleHist, ID: uint8(HParamsN), Since: V(0, 4, 2), Bucket: BParamsN, Help: "Histogram of the n request parameter."},
	{Name: "vllm:request_params_max_tokens", Kind: KindHistogram, Role: RoleHist, ID: uint8(HParamsMaxTokens), Since: V(0, 6, 4), Bucket: B125, Help: "Histogram of the max_tokens request parameter."},
	{Name: "vllm:request_params_best_of", Kind: KindHistogram, Role: RoleHist, ID: uint8(HParamsBestOf), Gen: GenV0, Since: V(0, 4, 2), Last: V(0, 6, 2), Bucket: BParamsN, Help: "Histogram of the best_of request parameter."},
	{Name: "vllm:request_prefill_kv_computed_tokens", Kind: KindHistogram, Role: RoleHist, ID: uint8(HPrefillKVComputed), Gen: GenV1, Since: V(0, 13, 0), Bucket: B125, Help: "Histogram of new KV tokens computed during prefill (excluding cached tokens)."},
	{Name: "vllm:kv_block_lifetime_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HKVBlockLifetime), Gen: GenV1, Since: V(0, 12, 0), Bucket: BKVResidency, Optional: true, Help: "Histogram of KV cache block lifetime from allocation to eviction."},
	{Name: "vllm:kv_block_idle_before_evict_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HKVBlockIdleEvict), Gen: GenV1, Since: V(0, 12, 0), Bucket: BKVResidency, Optional: true, Help: "Histogram of idle time before KV cache block eviction."},

	// Speculative decoding (only with a speculative config).
	{Name: "vllm:spec_decode_draft_acceptance_rate", Kind: KindGauge, Role: RoleGauge, ID: uint8(GSpecAcceptRate), Gen: GenV0, Since: V(0, 5, 3), Last: V(0, 9, 2), Optional: true, Help: "Speculative token acceptance rate."},
	{Name: "vllm:spec_decode_num_drafts", Kind: KindCounter, Role: RoleCounter, ID: uint8(CSpecDrafts), Gen: GenV1, Since: V(0, 8, 5), Optional: true, Help: "Number of spec decoding drafts."},
	{Name: "vllm:spec_decode_num_draft_tokens", Kind: KindCounter, Role: RoleCounter, ID: uint8(CSpecDraftTokens), Since: V(0, 5, 3), Optional: true, Help: "Number of draft tokens."},
	{Name: "vllm:spec_decode_num_accepted_tokens", Kind: KindCounter, Role: RoleCounter, ID: uint8(CSpecAccepted), Since: V(0, 5, 3), Optional: true, Help: "Number of accepted tokens."},

	{Name: "vllm:spec_decode_num_accepted_tokens_per_pos", Kind: KindCounter, Role: RoleLabeled, ID: uint8(LSpecAcceptedPos), Label: LabelPosition, Gen: GenV1, Since: V(0, 8, 5), Optional: true, Help: "Accepted tokens per draft position."},

	// P/D disaggregation and KV offload (CATALOG.md §2e: only with a KV
	// connector). The first offload layout is by transfer_type; the flat
	// load/store names of 0.24 are not read yet.
	{Name: "vllm:nixl_num_failed_transfers", Kind: KindCounter, Role: RoleCounter, ID: uint8(CKVTransferFailed), Gen: GenV1, Since: V(0, 11, 1), Optional: true, Help: "Number of failed NIXL KV Cache transfers."},
	{Name: "vllm:nixl_num_kv_expired_reqs", Kind: KindCounter, Role: RoleCounter, ID: uint8(CKVExpired), Gen: GenV1, Since: V(0, 15, 0), Optional: true, Help: "Number of requests that had their KV expire."},
	{Name: "vllm:kv_offload_total_bytes", Kind: KindCounter, Role: RoleCounter, ID: uint8(CKVOffloadBytes), Gen: GenV1, Since: V(0, 16, 0), Optional: true, Help: "Number of bytes offloaded by KV connector."},

	// SGLang (CATALOG.md §7; python/sglang/srt/metrics/collector.py, later
	// observability/metrics_collector.py): its names for the canonical
	// signals. Its release numbers are not vLLM's, so these rows carry none.
	// Retraction is SGLang's preemption; token_usage its KV usage.
	{Server: ServerSGLang, Name: "sglang:num_running_reqs", Kind: KindGauge, Role: RoleGauge, ID: uint8(GRunning), Help: "The number of running requests."},
	{Server: ServerSGLang, Name: "sglang:num_queue_reqs", Kind: KindGauge, Role: RoleGauge, ID: uint8(GWaiting), Help: "The number of requests in the waiting queue."},
	{Server: ServerSGLang, Name: "sglang:token_usage", Kind: KindGauge, Role: RoleGauge, ID: uint8(GKVUsage), Help: "The token usage."},
	{Server: ServerSGLang, Name: "sglang:max_total_num_tokens", Kind: KindGauge, Role: RoleGauge, ID: uint8(GKVTokensMax), Help: "Maximum total number of tokens in the KV cache pool."},
	{Server: ServerSGLang, Name: "sglang:cache_hit_rate", Kind: KindGauge, Role: RoleGauge, ID: uint8(GPrefixHitRateGPU), Help: "The prefix cache hit rate."},
	{Server: ServerSGLang, Name: "sglang:spec_accept_rate", Kind: KindGauge, Role: RoleGauge, ID: uint8(GSpecAcceptRate), Help: "The average acceptance rate of speculative decoding (`accepted tokens / total draft tokens` in batch)."},
	{Server: ServerSGLang, Name: "sglang:spec_accept_length", Kind: KindGauge, Role: RoleGauge, ID: uint8(GSpecAcceptLen), Help: "The average acceptance length of speculative decoding."},
	{Server: ServerSGLang, Name: "sglang:num_retracted_requests", Kind: KindCounter, Role: RoleCounter, ID: uint8(CPreemptions), Help: "Total number of retracted requests."},
	{Server: ServerSGLang, Name: "sglang:num_transfer_failed_reqs", Kind: KindCounter, Role: RoleCounter, ID: uint8(CKVTransferFailed), Help: "The number of transfer failed requests."},
	{Server: ServerSGLang, Name: "sglang:prompt_tokens", Kind: KindCounter, Role: RoleCounter, ID: uint8(CPromptTokens), Help: helpPromptToks},
	{Server: ServerSGLang, Name: "sglang:generation_tokens", Kind: KindCounter, Role: RoleCounter, ID: uint8(CGenTokens), Help: helpGenToks},
	{Server: ServerSGLang, Name: "sglang:cached_tokens", Kind: KindCounter, Role: RoleCounter, ID: uint8(CPromptCached), Help: "Number of cached prompt tokens."},
	{Server: ServerSGLang, Name: "sglang:time_to_first_token_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HTTFT), Bucket: BSGLangTTFT, Help: "Histogram of time to first token in seconds."},
	{Server: ServerSGLang, Name: "sglang:inter_token_latency_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HITL), Bucket: BSGLangITL, Help: "Histogram of inter-token latency in seconds."},
	// The name before inter_token_latency_seconds (the 0.3-era docs dump).
	{Server: ServerSGLang, Name: "sglang:time_per_output_token_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HITL), Rank: 1, Optional: true, Help: "Histogram of time per output token in seconds."},
	{Server: ServerSGLang, Name: "sglang:e2e_request_latency_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HE2E), Bucket: BSGLangE2E, Help: "Histogram of End-to-end request latency in seconds"},
	{Server: ServerSGLang, Name: "sglang:queue_time_seconds", Kind: KindHistogram, Role: RoleHist, ID: uint8(HQueue), Bucket: BSGLangQueue, Help: "Histogram of queueing time in seconds."},

	// prometheus_client's process collector (absent in multiprocess mode).
	{Name: "process_resident_memory_bytes", Kind: KindGauge, Role: RoleProc, ID: uint8(PRSS), Help: "Resident memory size in bytes."},
	{Name: "process_virtual_memory_bytes", Kind: KindGauge, Role: RoleProc, ID: uint8(PVirtual), Help: "Virtual memory size in bytes."},
	{Name: "process_start_time_seconds", Kind: KindGauge, Role: RoleProc, ID: uint8(PStartTime), Help: "Start time of the process since unix epoch in seconds."},
	{Name: "process_cpu_seconds", Kind: KindCounter, Role: RoleProc, ID: uint8(PCPUSeconds), Help: "Total user and system CPU time spent in seconds."},
	{Name: "process_open_fds", Kind: KindGauge, Role: RoleProc, ID: uint8(POpenFDs), Help: "Number of open file descriptors."},
	{Name: "process_max_fds", Kind: KindGauge, Role: RoleProc, ID: uint8(PMaxFDs), Help: "Maximum number of open file descriptors."},

	// vLLM's API server (prometheus-fastapi-instrumentator, 0.8.3+ per
	// CATALOG.md; absent with V0's multiprocess registry): responses by
	// handler, method and status, the status grouped ("2xx", "4xx") by
	// default and a code ("400") where the instrumentator is told not to
	// group. The one place a request refused before the engine (a prompt
	// over --max-model-len, a bad parameter) is counted.
	{Name: "http_requests", Kind: KindCounter, Role: RoleHTTP, Label: LabelStatus, Help: "Total number of requests by method, status and handler."},

	// production-stack's router re-uses the vllm: prefix; these names mark it.
	{Name: "vllm:current_qps", Kind: KindGauge, Role: RoleRouter},
	{Name: "vllm:healthy_pods_total", Kind: KindGauge, Role: RoleRouter},
	{Name: "vllm:num_incoming_requests", Kind: KindCounter, Role: RoleRouter},
	{Name: "vllm:avg_latency", Kind: KindGauge, Role: RoleRouter},
	{Name: "vllm:avg_itl", Kind: KindGauge, Role: RoleRouter},
	{Name: "vllm:num_prefill_requests", Kind: KindGauge, Role: RoleRouter},
	{Name: "vllm:num_decoding_requests", Kind: KindGauge, Role: RoleRouter},
	{Name: "vllm:request_errors", Kind: KindCounter, Role: RoleRouter},
	// NVIDIA Dynamo's HTTP frontend routes to vLLM or SGLang workers (which
	// serve their engine's families on their own ports, beside
	// dynamo_component_*): its names mark a router too. From the kthena
	// #913 capture (testdata/other-engines) and Dynamo's metrics docs.
	// The queue and the in-flight count are per model (label model): what
	// a Dynamo pool holds before and in its workers.
	{Name: "dynamo_frontend_inflight_requests", Kind: KindGauge, Role: RoleRouter, ID: uint8(RInflight)},
	{Name: "dynamo_frontend_queued_requests", Kind: KindGauge, Role: RoleRouter, ID: uint8(RQueued)},
	{Name: "dynamo_frontend_requests", Kind: KindCounter, Role: RoleRouter},
	{Name: "dynamo_frontend_disconnected_clients", Kind: KindGauge, Role: RoleRouter},
	{Name: "dynamo_frontend_model_max_num_seqs", Kind: KindGauge, Role: RoleRouter, ID: uint8(RMaxNumSeqs)},
	{Name: "dynamo_frontend_model_max_num_batched_tokens", Kind: KindGauge, Role: RoleRouter},
	{Name: "dynamo_frontend_model_kv_cache_block_size", Kind: KindGauge, Role: RoleRouter},
	{Name: "dynamo_frontend_model_context_length", Kind: KindGauge, Role: RoleRouter},
}

// OtherEngines maps the metric prefixes of other serving engines to their
// names, so a target that is not vLLM gets a useful error.
var OtherEngines = []struct{ Prefix, Name string }{
	{"tgi_", "Hugging Face TGI"},
	{"nv_trt_llm_", "TensorRT-LLM (Triton)"},
	{"nv_inference_", "NVIDIA Triton"},
	{"lmcache:", "LMCache"},
}

// InferenceHandlers are the API server's routes that take inference
// requests (OpenAI's, the pooling and scoring ones, SageMaker's and the
// old demo server's): the only ones http_requests counts toward
// rejections. /metrics, /health, /v1/models and an unmatched path (the
// instrumentator files it under "none") say nothing about them.
var InferenceHandlers = []string{
	"/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/v1/responses",
	"/v1/audio/transcriptions", "/v1/audio/translations", "/v1/score", "/v1/rerank",
	"/v2/rerank", "/rerank", "/score", "/pooling", "/classify", "/invocations", "/generate",
}

// Finish reasons vLLM V1 pre-creates at 0, by release.
var FinishReasons = []struct {
	Reason string
	Since  Version
}{
	{"stop", V(0, 4, 2)}, {"length", V(0, 4, 2)}, {"abort", V(0, 4, 2)},
	{"error", V(0, 14, 0)}, {"repetition", V(0, 18, 0)},
}

// FinishAbort is the finish reason of requests the client gave up on;
// FinishError of requests the engine failed (≥0.14); FinishLength of
// answers cut at max_tokens (or the context's end), FinishRepetition of
// those the engine's repetition check stopped (≥0.18): both ended by a
// limit, not by the model's own stop.
const (
	FinishAbort      = "abort"
	FinishError      = "error"
	FinishLength     = "length"
	FinishRepetition = "repetition"
)

// Waiting reasons of vllm:num_requests_waiting_by_reason.
const (
	WaitCapacity = "capacity"
	WaitDeferred = "deferred"
)

// Prompt token sources of vllm:prompt_tokens_by_source.
const (
	SourceLocalCompute = "local_compute"
	SourceLocalCache   = "local_cache_hit"
	SourceExternal     = "external_kv_transfer"
)

// Sleep state values of vllm:engine_sleep_state.
const SleepAwake = "awake"

// SleepStates are the sleep_state values V1 pre-creates (awake is 1 while
// the engine serves, the others 0).
var SleepStates = []string{SleepAwake, "weights_offloaded", "discard_all"}

// WaitReasons are the reason values of vllm:num_requests_waiting_by_reason.
var WaitReasons = []string{WaitCapacity, WaitDeferred}

// PromptSources are the source values of vllm:prompt_tokens_by_source.
var PromptSources = []string{SourceLocalCompute, SourceLocalCache, SourceExternal}

// cache_config_info labels vtop reads.
const (
	CCBlockSize       = "block_size"
	CCNumGPUBlocks    = "num_gpu_blocks"
	CCNumCPUBlocks    = "num_cpu_blocks"
	CCGPUMemUtil      = "gpu_memory_utilization"
	CCPrefixCaching   = "enable_prefix_caching"
	CCCacheDtype      = "cache_dtype"
	CCSwapSpaceBytes  = "swap_space_bytes"
	CCKVCacheTokens   = "kv_cache_size_tokens"
	CCCPUOffloadGB    = "cpu_offload_gb"
	CCSlidingWindow   = "sliding_window"
	CCBlocksOverride  = "num_gpu_blocks_override"
	CCIsAttentionFree = "is_attention_free"
)

// BucketLayout is the bucket upper bounds (without +Inf) one family used over
// a span of releases.
type BucketLayout struct {
	Since, Until Version // Until zero: still current
	Gen          Gen     // GenUnknown: both
	Bounds       []float64
}

var (
	ttftOld    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}
	itlOld     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}
	latOld     = []float64{1, 2.5, 5, 10, 15, 20, 30, 40, 50, 60}
	latMid     = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0}
	cudaGraph  = []float64{1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256, 272, 288, 304, 320, 336, 352, 368, 384, 400, 416, 432, 448, 464, 480, 496, 512}
	iterFixed  = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	kvResident = []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800}
)

var bucketLayouts = map[Buckets][]BucketLayout{
	BTTFT: {
		{Until: V(0, 8, 3), Bounds: ttftOld},
		{Since: V(0, 8, 4), Bounds: append(append([]float64{}, ttftOld...), 20, 40, 80, 160, 640, 2560)},
	},
	BITL: {
		{Until: V(0, 8, 3), Bounds: itlOld},
		{Since: V(0, 8, 4), Bounds: append(append([]float64{}, itlOld...), 5, 7.5, 10, 20, 40, 80)},
	},
	BLatency: {
		{Until: V(0, 6, 3), Bounds: latOld},
		{Since: V(0, 6, 4), Until: V(0, 8, 3), Bounds: latMid},
		{Since: V(0, 8, 4), Bounds: append(append([]float64{}, latMid...), 120, 240, 480, 960, 1920, 7680)},
	},
	BIter: {
		{Since: V(0, 6, 4), Until: V(0, 6, 6), Bounds: []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8096}},
		{Since: V(0, 7, 0), Until: V(0, 8, 4), Bounds: cudaGraph},
		{Since: V(0, 8, 5), Bounds: iterFixed},
	},
	BParamsN:     {{Bounds: []float64{1, 2, 5, 10, 20}}},
	BKVResidency: {{Bounds: kvResident}},
	// SGLang's defaults (TokenizerMetricsCollector, SchedulerMetricsCollector);
	// the 0.3-era docs dump shows older layouts, not tracked.
	BSGLangTTFT:  {{Bounds: []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}}},
	BSGLangITL:   {{Bounds: []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000}}},
	BSGLangE2E:   {{Bounds: []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400}}},
	BSGLangQueue: {{Bounds: []float64{0.0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000}}},
}

// BucketBounds returns the bucket upper bounds (without +Inf) family b had in
// release v. maxModelLen sizes the 1-2-5 layouts.
func BucketBounds(b Buckets, v Version, maxModelLen int) []float64 {
	if b == B125 {
		return Build125(maxModelLen)
	}
	for _, l := range bucketLayouts[b] {
		if (l.Since.IsZero() || !v.Less(l.Since)) && (l.Until.IsZero() || !l.Until.Less(v)) {
			return l.Bounds
		}
	}
	return nil
}

// Build125 is vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, … ≤ max.
func Build125(max int) []float64 {
	var out []float64
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 5} {
			if m*p > max {
				return out
			}
			out = append(out, float64(m*p))
		}
	}
}

// Shown reports whether a release of generation g exposes row m by default.
func (m *Metric) ShownIn(g Gen, v Version) bool {
	if m.Gen != GenUnknown && m.Gen != g {
		return false
	}
	if !m.Since.IsZero() && v.Less(m.Since) {
		return false
	}
	until := m.Shown
	if until.IsZero() {
		until = m.Last
	}
	return until.IsZero() || !until.Less(v)
}
