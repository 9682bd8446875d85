package diagnose

import (
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// Quantiles summarises a latency histogram over a window. Every field is NaN
// when the window holds no observation: missing is not zero.
type Quantiles struct {
	P50, P90, P95, P99 float64
	Mean               float64
	Count              float64 // observations in the window
	// Lowest and Highest are the first and the last finite bucket bounds.
	// A quantile at or below Lowest was interpolated inside the first
	// bucket (vLLM's queue-time buckets start at 0.3 s), one at Highest fell
	// in +Inf: the display says "≤0.3s" / "≥2560s" rather than a precision
	// the buckets do not have.
	Lowest, Highest float64
	// Bounds are the finite bucket bounds, ascending (shared, read-only):
	// the display marks a percentile interpolated inside a wide bucket.
	Bounds []float64
}

// FinishShare is one finish reason's part of the finished requests.
type FinishShare struct {
	Reason string
	PerSec float64
	Share  float64 // of all finished requests in the window, 0..1
}

// Stats are the numbers derived for one sub-series, one endpoint, one model
// across the fleet, or the whole fleet, over a window. Aggregates merge the
// underlying data (bucket rates summed bucket by bucket, KV weighted by
// capacity), never averaging percentiles. NaN means unknown.
type Stats struct {
	Span    time.Duration // the window actually covered (shorter while history fills)
	Engines int           // sub-series merged in

	TTFT, ITL, TPOT, E2E, Queue, Prefill, Decode Quantiles

	KVUsage          float64 // 0..1, weighted by capacity when known
	KVUsageMax       float64 // the fullest engine
	KVCapacityTokens float64 // num_gpu_blocks × block_size, summed
	NumGPUBlocks     float64
	BlockSize        float64 // NaN when engines differ
	GPUMemUtil       float64 // --gpu-memory-utilization (largest)
	PrefixCaching    sources.Tri
	PrefixHitRatio   float64 // hits/queries over the window (V0: the engine's hit-rate gauge)
	PrefixQueryRate  float64 // queried tokens/s
	PreemptionsRate  float64 // per second
	Swapped          float64 // V0
	CPUKVUsage       float64 // V0 swap space usage
	Running, Waiting float64
	WaitingCapacity  float64 // ≥0.20: waiting for KV/batch capacity
	WaitingDeferred  float64 // ≥0.20: deferred (LoRA budget, KV transfer)
	PromptTokRate    float64 // tokens/s
	GenTokRate       float64
	ReqRate          float64 // finished requests/s
	Finish           []FinishShare
	AbortShare       float64
	AvgPromptLen     float64 // tokens per finished request
	// PromptLenTop is the prompt-length histogram's last finite bound:
	// vLLM ends that 1-2-5 layout at the largest value ≤ --max-model-len,
	// which so lies in [PromptLenTop, the next 1-2-5 value). PromptOverTop
	// is the share of finished prompts above it. NaN unknown.
	PromptLenTop, PromptOverTop float64
	AvgGenLen                   float64
	MeanIterTokens              float64   // tokens per engine step, a batch-size proxy
	IterTokens                  Quantiles // tokens per engine step (quantiles are token counts, not seconds)
	// IterTokensByToken is the same distribution weighted by the tokens each
	// step carries: the step size a token experiences. It pairs with the
	// inter-token histogram, which is observed once per token, where the
	// step-weighted one does not (a window with many small quiet steps and
	// fewer large busy ones has a small step p50 but a large token p50).
	IterTokensByToken Quantiles
	PromptCachedRate  float64 // prompt tokens/s served from cache (≥0.16)
	SpecDraftRate     float64 // speculative drafts/s (with a speculative config); NaN unexposed
	SpecDraftTokRate  float64 // drafted tokens/s
	SpecAcceptedRate  float64 // accepted drafted tokens/s
	// Speculative decoding: accepted ÷ draft tokens; tokens a step yields
	// (1 + accepted per draft; SGLang's accept length); drafts per engine
	// step; the share of drafts accepted at each position (≥0.8.5).
	SpecAcceptRate, SpecAcceptLen, SpecDraftsPerStep float64
	SpecPosAccept                                    []float64
	// P/D and KV offload: failed transfers/s (NIXL, SGLang), requests
	// whose KV expired/s (NIXL), bytes offloaded/s (offloading connector).
	KVXferFailRate, KVExpiredRate, KVOffloadRate float64
	ErrorShare                                   float64 // finished with reason error (≥0.14), NaN before
	RejectRate                                   float64 // admission rejections/s (≥0.32), NaN unexposed
	Rejects                                      []FinishShare
	// The API server's responses to inference requests (an endpoint's
	// http_requests_total, no model or engine label): per second, the
	// share answered 4xx (refused before an engine saw them: a prompt
	// over --max-model-len, a bad parameter, a rate limit) and each
	// status ("4xx" grouped, "400" where the server does not group),
	// most frequent first. NaN/nil where no endpoint counts them.
	HTTPRate, HTTP4xxShare float64
	HTTPStatus             []FinishShare
	// Sleep is what engine_sleep_state says (≥0.11.1): unknown, awake or
	// asleep (any engine asleep); SleepLevel the deepest level set.
	Sleep      SleepState
	SleepLevel string
	Paused     sources.Tri // engine_pause_state, where exposed
}

// SleepState is an engine's sleep mode as vLLM reports it.
type SleepState uint8

const (
	SleepUnknown SleepState = iota
	SleepAwake
	SleepAsleep
)

func (s SleepState) String() string { return [...]string{"unknown", "awake", "asleep"}[s] }

// State is a target's reachability.
type State uint8

const (
	StatePending State = iota // not polled yet
	StateUp
	StateDown
	StateStale // no answer for a while: polls hang or stopped
)

func (s State) String() string {
	return [...]string{"pending", "up", "down", "stale"}[s]
}

// SubView is one (model, engine) sub-series of an endpoint.
type SubView struct {
	Key   sources.SubKey
	Stats Stats
}

// EndpointView is everything the UI and the report show about one target.
type EndpointView struct {
	Index     int
	Name      string
	State     State
	Since     time.Time // when the current state began
	LastError string
	NotVLLM   bool // down because it answers without vLLM metrics (another program on the port)
	// Blind: its data comes through a source that fails now
	// (Frame.Outages): nothing is known of it, so it is stale, never
	// down, and raises no finding of its own.
	Blind          bool
	LastAttempt    time.Time
	LastSuccess    time.Time
	ScrapeDuration time.Duration
	RestartedAt    time.Time // zero unless a restart was seen recently
	Restarts       []Restart // restarts within the last hour, oldest first; shared, read-only
	Shifts         []Shift   // changes of workload, capacity and latency against their baselines within the last hour, oldest first
	Kind           sources.EndpointKind
	Version        sources.VersionRange
	Models         []string
	Warnings       []string
	Samples        int
	RSS            float64 // API-server resident memory, bytes (NaN in multiprocess mode)
	MaxNumSeqs     int     // from configuration; 0 unknown
	Pool           string  // from configuration: the replicas replica_imbalance compares; empty: by model
	Pod, Namespace string  // the Kubernetes pod serving it, where discovery says; empty otherwise
	Cache          *sources.CacheConfig
	Lora           *sources.LoraInfo
	Router         []sources.RouterModel // a router's per-model queue (Dynamo's frontend); nil for an engine
	Stats          Stats
	Subs           []SubView
	Spark          []SparkPoint // oldest first; shared, read-only
	SparkLong      []SparkPoint // one point per LongStep, 30 min; shared, read-only
	Trend          Trend        // the queue and batch over the window, from Spark
	GPU            EndpointGPU  // filled when the endpoint runs on this host
	Verdict        Verdict      // which limit binds (the detector's; zero before rules run)
	Findings       []Finding    // this endpoint's firing and resolving findings, worst first
	Pending        []Finding    // conditions holding toward their hold (State pending), worst first
}

// BatchSlots is how many sequences can run at once in what st covers:
// --max-num-seqs bounds each data-parallel engine, and each schedules its
// own batch, so it is that times the engines merged into st. 0: unknown.
func BatchSlots(maxNumSeqs int, st *Stats) int {
	if maxNumSeqs <= 0 {
		return 0
	}
	return maxNumSeqs * max(1, st.Engines)
}

// ModelView aggregates every endpoint serving one model.
type ModelView struct {
	Model     string
	Endpoints int
	Stats     Stats
	Verdict   Verdict // the pool's bottleneck (the detector's)
	// Routers are the routers up in front of the pool (Dynamo frontends
	// serving this model); with them Stats.Waiting is RouterQueued, the
	// requests they hold, and the capacity is the endpoints'.
	Routers        []string
	RouterQueued   float64 // NaN without a router
	RouterInflight float64
}

// PoolView is one pool the configuration names (a target's pool:), with
// its verdict.
type PoolView struct {
	Pool      string
	Endpoints int     // targets configured in it
	Verdict   Verdict // the pool's bottleneck (the detector's)
}

// FleetView aggregates all endpoints that are up.
type FleetView struct {
	Up, Total int
	Stats     Stats
	Models    []ModelView
	Pools     []PoolView // configured pools, by name; none configured: nil (the pools are the models)
	Verdict   Verdict    // the fleet's bottleneck (the detector's)
	Spark     []SparkPoint
	SparkLong []SparkPoint // one point per LongStep, 30 min
}

// Frame is one complete, immutable picture handed to the UI or the report.
type Frame struct {
	Time      time.Time
	Window    time.Duration
	Interval  time.Duration
	Endpoints []EndpointView
	Fleet     FleetView
	GPU       sources.GPUSnapshot // local GPUs (NVML or simulated), the latest reading
	GPUSeries []GPUSeries         // history of each GPU, indexed like GPU.GPUs
	GPUEvents []sources.GPUEvent  // XID events within XIDRetention, oldest first
	Findings  []Finding           // every firing and resolving finding, worst first
	Pending   []Finding           // every pending finding (a condition holding, not yet for its hold)
	Groups    []Group             // rules firing on two or more endpoints: one fleet-wide problem each
	SLO       SLO                 // the profile the findings judged latency by (zero before rules run)
	KVBands   KVBands             // the KV colour bands of the active thresholds (zero before rules run; read with KV)
	// Newest is the newest successful scrape of any endpoint (with
	// --prometheus, the newest sample's time): the data's age is Time
	// minus it. Zero before the first answer.
	Newest time.Time
	// Roster is the targets that joined or left within
	// Config.RosterShown, newest first; RosterMore counts older ones
	// within it that were not kept.
	Roster     []RosterEvent
	RosterMore int
	// Problems are what the sources say about themselves now ("file_sd
	// t.json: no such file", a bound reached, a gap in the history), one
	// line each, sorted; set by whoever feeds the engine.
	Problems []string
	// Outages are the sources that feed the endpoints (Prometheus) and
	// fail now: their endpoints are Blind, not down. Set by whoever feeds
	// the engine.
	Outages []Outage
	// Failing are the other sources that fail now (a dcgm-exporter, a
	// file_sd or DNS rule): the endpoints stay as they are, but what the
	// source gives (GPUs, targets) is its last or nothing. Sorted.
	Failing []Outage
}

// Outage is a source failing.
type Outage struct {
	Source string    // "Prometheus prom:9090"
	Err    string    // its error, one sanitized line
	Since  time.Time // failing since
}
