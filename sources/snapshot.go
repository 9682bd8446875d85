package sources

import (
	"math"
	"time"
)

// Scrape is one poll of one target: either a normalized Snapshot or an error.
// It is a plain value; nothing in it points into parser buffers.
type Scrape struct {
	Target   string    // the target's display name
	Time     time.Time // when the poll started (the poller's clock)
	Duration time.Duration
	Err      error     // one line, already sanitized; nil on success
	Data     *Snapshot // nil when Err != nil
	// Body, or Lines, and ContentType are the raw response as fetched, kept
	// only when the poller is asked to (a recording replays them through
	// the parser): Lines when the target's previous body was normalized,
	// Body otherwise. A failed scrape may carry those of a successful one
	// that it replaced before the pipeline took it.
	Body        []byte
	Lines       *BodyLines
	ContentType string
}

// EndpointKind says what a /metrics endpoint turned out to be.
type EndpointKind uint8

const (
	KindEngine    EndpointKind = iota // a vLLM engine (API server)
	KindRouter                        // a router: production-stack's (re-using the vllm: prefix), Dynamo's frontend
	KindNoSamples                     // vllm: families declared, no samples (V0 multiprocess quirk)
	KindUnknown                       // never scraped successfully: what it is is not known yet
)

func (k EndpointKind) String() string {
	return [...]string{"engine", "router", "no-samples", "unknown"}[k]
}

// Snapshot is a normalized scrape of one endpoint.
type Snapshot struct {
	Kind    EndpointKind
	Version VersionRange
	Subs    []Sub // one per (model, engine), sorted
	Proc    [NumProcs]float64
	// HTTP is the API server's responses to inference requests by status
	// (http_requests_total summed over InferenceHandlers and methods),
	// sorted by status; nil when the endpoint does not count them.
	HTTP []LabeledValue
	Lora *LoraInfo
	// Router is what a router serves per model (Dynamo's frontend: its
	// queue), sorted by model; nil for an engine.
	Router   []RouterModel
	Samples  int      // samples read
	Warnings []string // sanitized one-liners about data vtop ignored or repaired
}

// RouterModel is a router's numbers for one model: by RouterValue, NaN
// where the router does not serve it.
type RouterModel struct {
	Model  string
	Values [NumRouterValues]float64
}

// SubKey identifies a sub-series of an endpoint: a model on a data-parallel engine.
type SubKey struct{ Model, Engine string }

// Sub is the canonical data of one (model, engine) sub-series. Missing values
// are NaN (gauges, counters) or a nil Counts slice (histograms): never zero.
type Sub struct {
	Key      SubKey
	Gauges   [NumGauges]float64
	Counters [NumCounters]float64
	Created  [NumCounters]float64 // _created timestamps, NaN when absent
	Hists    [NumHists]Histogram
	Labeled  [NumLabeled][]LabeledValue
	Cache    *CacheConfig
}

// Histogram is a classic cumulative histogram. Bounds ends with +Inf and is
// shared between snapshots with the same layout: treat it as read-only.
type Histogram struct {
	Bounds  []float64
	Counts  []float64 // cumulative, same length as Bounds
	Sum     float64
	Count   float64
	Created float64
}

// Present reports whether the histogram was exposed.
func (h *Histogram) Present() bool { return h.Counts != nil }

// LabeledValue is one series of a Labeled family.
type LabeledValue struct {
	Label   string
	Value   float64
	Created float64
}

// CacheConfig is what vllm:cache_config_info says about the KV cache.
type CacheConfig struct {
	BlockSize      int     // tokens per block; 0 unknown
	NumGPUBlocks   int     // 0 unknown ("None" in early V1)
	NumCPUBlocks   int     // 0 unknown or none
	GPUMemUtil     float64 // NaN unknown
	PrefixCaching  Tri
	CacheDtype     string
	SwapSpaceBytes float64 // NaN unknown
	Labels         []Label // every label as exposed (sanitized), sorted by name
}

// CapacityTokens is the KV capacity in tokens, or 0 when unknown.
func (c *CacheConfig) CapacityTokens() int {
	if c == nil || c.BlockSize <= 0 || c.NumGPUBlocks <= 0 {
		return 0
	}
	return c.BlockSize * c.NumGPUBlocks
}

// Label is a sanitized name/value pair.
type Label struct{ Name, Value string }

// LoraInfo is vllm:lora_requests_info.
type LoraInfo struct {
	MaxLora int
	Running []string
	Waiting []string
}

// Tri is a three-valued boolean: unknown, no, yes.
type Tri int8

const (
	TriUnknown Tri = iota
	TriNo
	TriYes
)

func (t Tri) String() string { return [...]string{"unknown", "no", "yes"}[t] }

func newSub(k SubKey) Sub {
	s := Sub{Key: k}
	for i := range s.Gauges {
		s.Gauges[i] = math.NaN()
	}
	for i := range s.Counters {
		s.Counters[i] = math.NaN()
		s.Created[i] = math.NaN()
	}
	for i := range s.Hists {
		s.Hists[i].Created = math.NaN()
		s.Hists[i].Sum = math.NaN()
		s.Hists[i].Count = math.NaN()
	}
	return s
}

// Labeled returns the value of one label of a Labeled family, NaN when absent.
func (s *Sub) LabeledValue(f Labeled, label string) float64 {
	for _, lv := range s.Labeled[f] {
		if lv.Label == label {
			return lv.Value
		}
	}
	return math.NaN()
}

// Models returns the distinct model names of a snapshot, in order.
func (s *Snapshot) Models() []string {
	var out []string
	for _, sub := range s.Subs {
		if len(out) == 0 || out[len(out)-1] != sub.Key.Model {
			out = append(out, sub.Key.Model)
		}
	}
	return out
}
