package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	jsoniter "github.com/json-iterator/go"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	f "github.com/vtop-dev/vtop/ui/format"
)

// jsonc encodes the elements of the report's lists (endpoints, findings,
// GPUs, …): json-iterator's configuration that writes what encoding/json
// writes (HTML-escaped strings, the same numbers, a MarshalJSON result as
// it is), without encoding/json's scan of every MarshalJSON result (the
// report has many small marshalers: numbers, quantile rows, stat rows).
// encoding/json's encoding of the lists was a tenth of a 2,000-replica
// refresh's CPU; json-iterator takes about 40 % less. It writes a plain
// float64's exponent as 1e-07, encoding/json as 1e-7: the lists hold none
// (TestJSONCMatchesEncodingJSON fills every field of every type in them
// with random values and compares).
var jsonc = jsoniter.ConfigCompatibleWithStandardLibrary

// SchemaVersion names the JSON layout. Fields are only ever added within a
// version; a change of meaning or a removal bumps it.
// v2: evidence is a number with its unit, or text; no formatted value.
const SchemaVersion = "vtop.report/v2"

// Num is a number that encodes NaN and ±Inf as null: unknown is not zero.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	return n.appendJSON(nil), nil
}

func (n Num) appendJSON(b []byte) []byte {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// JSONReport is the document `vtop --once --output json` prints.
type JSONReport struct {
	Schema          string         `json:"schema"`
	VtopVersion     string         `json:"vtop_version"`
	GeneratedAt     time.Time      `json:"generated_at"`
	WindowSeconds   float64        `json:"window_seconds"`
	IntervalSeconds float64        `json:"interval_seconds"`
	Status          JSONStatus     `json:"status"`
	Problems        []string       `json:"problems,omitempty"` // what the sources say about themselves
	Fleet           JSONFleet      `json:"fleet"`
	Endpoints       []JSONEndpoint `json:"endpoints"`
	GPU             JSONGPUStatus  `json:"gpu"`
	GPUs            []JSONGPU      `json:"gpus"`
	Findings        []JSONFinding  `json:"findings"` // firing and resolving, worst first
	Pending         []JSONFinding  `json:"pending"`  // conditions holding toward their hold
	Groups          []JSONGroup    `json:"groups"`   // one rule firing on several endpoints
	Timeline        []JSONEvent    `json:"timeline"` // what changed and when, every endpoint's and the fleet's, oldest first
}

// JSONEvent is one moment of an incident timeline.
type JSONEvent struct {
	Time     time.Time `json:"time"`
	Target   string    `json:"target"`
	Kind     string    `json:"kind"`               // workload, capacity, latency, back, restart, joined, left, firing, resolving
	Severity string    `json:"severity,omitempty"` // firing and resolving only
	Text     string    `json:"text"`
}

// JSONShift is one change of a signal against its baseline.
type JSONShift struct {
	Signal   string     `json:"signal"` // "prompt mean", "arrival rate", "GPU SM clock", ...
	Kind     string     `json:"kind"`   // workload (a traffic question), capacity (a fault), symptom (latency)
	Unit     string     `json:"unit"`
	Onset    time.Time  `json:"onset"`    // the scrape it began at
	Detected time.Time  `json:"detected"` // when it had held long enough to say
	Before   Num        `json:"before"`   // the baseline level
	After    Num        `json:"after"`    // the level since the onset
	Factor   Num        `json:"factor"`   // after/before; null for a share
	Ended    *time.Time `json:"ended"`    // null while it lasts
	Accepted bool       `json:"accepted"` // ended by becoming the new baseline
}

// JSONRestart is one restart of an endpoint's process.
type JSONRestart struct {
	At            time.Time  `json:"at"`          // the new process's first scrape
	LastBefore    *time.Time `json:"last_before"` // the old one's last
	StartedAt     *time.Time `json:"started_at"`  // process_start_time_seconds, when exposed
	DownSeconds   Num        `json:"down_seconds"`
	RSSBefore     Num        `json:"resident_memory_before_bytes"`
	RSSPeak       Num        `json:"resident_memory_peak_bytes"`
	RSSAfter      Num        `json:"resident_memory_after_bytes"`
	GPUMemBefore  Num        `json:"gpu_memory_before_bytes"`
	GPUMemAfter   Num        `json:"gpu_memory_after_bytes"`
	MemLimitBytes Num        `json:"memory_limit_bytes"` // null unknown
	// The KV cache the old process had and the new one came back with
	// (cache_config_info): tokens over its engines, the
	// --gpu-memory-utilization that sized them, the dtype; null, "":
	// unknown.
	KVBefore      Num    `json:"kv_cache_before_tokens"`
	KVAfter       Num    `json:"kv_cache_after_tokens"`
	MemUtilBefore Num    `json:"gpu_memory_utilization_before"`
	MemUtilAfter  Num    `json:"gpu_memory_utilization_after"`
	DtypeBefore   string `json:"kv_cache_dtype_before,omitempty"`
	DtypeAfter    string `json:"kv_cache_dtype_after,omitempty"`
}

// Timeline converts timeline events to the JSON layout.
func Timeline(evs []diagnose.Event) []JSONEvent {
	out := make([]JSONEvent, 0, len(evs))
	for _, e := range evs {
		je := JSONEvent{Time: e.Time.UTC(), Target: e.Target, Kind: e.Kind.String(), Text: f.Say(e.Text)}
		if e.Kind == diagnose.EventFiring || e.Kind == diagnose.EventResolving {
			je.Severity = e.Severity.String()
		}
		out = append(out, je)
	}
	return out
}

func shiftsJSON(ss []diagnose.Shift) []JSONShift {
	out := make([]JSONShift, 0, len(ss))
	for _, s := range ss {
		out = append(out, JSONShift{Signal: s.Name, Kind: s.Kind.String(), Unit: string(s.Unit), Onset: s.Onset.UTC(),
			Detected: s.Detected.UTC(), Before: Num(s.Before), After: Num(s.After), Factor: Num(s.Factor()),
			Ended: tptr(s.Ended), Accepted: s.Accepted})
	}
	return out
}

func restartsJSON(rs []diagnose.Restart) []JSONRestart {
	out := make([]JSONRestart, 0, len(rs))
	for _, r := range rs {
		lim := math.NaN()
		if r.MemLimit > 0 {
			lim = r.MemLimit
		}
		down := math.NaN()
		if d := r.Down(); d > 0 {
			down = d.Seconds()
		}
		out = append(out, JSONRestart{At: r.At.UTC(), LastBefore: tptr(r.LastBefore), StartedAt: tptr(r.StartedAt),
			DownSeconds: Num(down), RSSBefore: Num(r.RSSBefore), RSSPeak: Num(r.RSSPeak), RSSAfter: Num(r.RSSAfter),
			GPUMemBefore: Num(r.GPUMemBefore), GPUMemAfter: Num(r.GPUMemAfter), MemLimitBytes: Num(lim),
			KVBefore: Num(r.KVBefore), KVAfter: Num(r.KVAfter), MemUtilBefore: Num(r.MemUtilBefore), MemUtilAfter: Num(r.MemUtilAfter),
			DtypeBefore: r.DtypeBefore, DtypeAfter: r.DtypeAfter})
	}
	return out
}

// JSONGroup is one rule firing on two or more endpoints; members are the
// findings' ids.
type JSONGroup struct {
	Rule     string   `json:"rule"`
	Title    string   `json:"title"`
	Severity string   `json:"severity"`
	Targets  []string `json:"targets"`
	Members  []string `json:"members"`
}

// JSONFinding is one diagnosed problem.
type JSONFinding struct {
	ID       string `json:"id"` // rule@target[/model][#engine][:gpuN]
	Rule     string `json:"rule"`
	Severity string `json:"severity"` // info, warning, critical
	State    string `json:"state"`    // pending, firing, resolving
	// HeldSeconds: how long the condition has held (pending: toward
	// HoldSeconds, the hold it needs; firing: since first_seen).
	HeldSeconds    Num            `json:"held_seconds"`
	HoldSeconds    Num            `json:"hold_seconds"`
	ResolvingSince *time.Time     `json:"resolving_since"` // null unless resolving
	Target         string         `json:"target"`          // endpoint name
	Model          string         `json:"model,omitempty"`
	Engine         string         `json:"engine,omitempty"`
	FirstSeen      *time.Time     `json:"first_seen"`
	LastSeen       *time.Time     `json:"last_seen"`
	Title          string         `json:"title"`
	Summary        string         `json:"summary"`
	Explain        string         `json:"explain"`
	Action         string         `json:"action"`
	Evidence       []JSONEvidence `json:"evidence"`
	Flags          []JSONFlag     `json:"flags"`
	Cause          string         `json:"cause,omitempty"`    // the id of the cause this symptom is grouped under
	Symptoms       []string       `json:"symptoms,omitempty"` // the ids of the symptoms grouped under this cause
}

// JSONEvidence is one measured value behind a finding: a number with its
// unit, or text for evidence that is not a number. Never a formatted number.
type JSONEvidence struct {
	Name          string `json:"name"`
	Number        *Num   `json:"number,omitempty"` // the number itself (null: unknown); absent for text evidence
	Unit          string `json:"unit,omitempty"`   // see diagnose.Unit: ratio, s, count, per_s, req/s, tokens/s, tokens, bytes, …
	Text          string `json:"text,omitempty"`   // text evidence only
	WindowSeconds Num    `json:"window_seconds"`   // 0: instantaneous
	// A latency percentile's first and last finite bucket bounds: at or
	// below the first it was interpolated, at the last it fell in +Inf.
	BucketLowest  *Num `json:"bucket_lowest,omitempty"`
	BucketHighest *Num `json:"bucket_highest,omitempty"`
}

// JSONFlag is a recommended vLLM flag change. from is empty when the
// current value is unknown; to says what is missing when it cannot be
// computed.
type JSONFlag struct {
	Flag string `json:"flag"`
	From string `json:"from"`
	To   string `json:"to"`
	Why  string `json:"why"`
	// Alternative: instead of the flag before it, not with it; each is
	// computed on today's configuration (recompute after applying one).
	Alternative bool `json:"alternative,omitempty"`
}

// Findings converts findings to the JSON layout.
func Findings(fs []diagnose.Finding) []JSONFinding {
	out := make([]JSONFinding, 0, len(fs))
	for _, fd := range fs {
		j := JSONFinding{ID: fd.ID(), Cause: fd.Cause, Symptoms: fd.Symptoms, Rule: fd.Rule, Severity: fd.Severity.String(), State: fd.State.String(),
			HeldSeconds: Num(fd.HeldFor.Seconds()), HoldSeconds: Num(fd.Hold.Seconds()), ResolvingSince: tptr(fd.ResolvingSince),
			Target: fd.Target, Model: fd.Model, Engine: fd.Engine,
			FirstSeen: tptr(fd.FirstSeen), LastSeen: tptr(fd.LastSeen), Title: fd.Title, Summary: f.Say(fd.Summary),
			Explain: f.Say(fd.Explain), Action: f.Say(fd.Action), Evidence: []JSONEvidence{}, Flags: []JSONFlag{}}
		j.Evidence = evidence(fd.Evidence)
		for _, fc := range fd.Flags {
			j.Flags = append(j.Flags, JSONFlag{fc.Flag, f.Value(fc.From), f.Value(fc.To), f.Say(fc.Why), fc.Alt})
		}
		out = append(out, j)
	}
	return out
}

func evidence(es []diagnose.Evidence) []JSONEvidence {
	out := []JSONEvidence{}
	for _, e := range es {
		je := JSONEvidence{Name: e.Name, Text: f.Say(e.Text), WindowSeconds: Num(e.Window.Seconds())}
		if e.Numeric() {
			je.Number, je.Unit = numPtr(e.Num), string(e.Unit)
		}
		if e.Quantile() {
			je.BucketLowest, je.BucketHighest = numPtr(e.Lowest), numPtr(e.Highest)
		}
		out = append(out, je)
	}
	return out
}

// JSONStatus is the overall verdict, as the exit status says it.
type JSONStatus struct {
	Code int    `json:"code"` // 0 ok, 1 warning, 2 critical, 3 unknown
	Text string `json:"text"`
	// How the collection went: it ran elapsed_seconds of window_seconds;
	// interrupted by a signal, or stopped early because no target answered.
	ElapsedSeconds Num  `json:"elapsed_seconds"`
	Interrupted    bool `json:"interrupted"`
	NoAnswer       bool `json:"no_target_answered"`
}

// JSONFleet aggregates the endpoints that are up.
type JSONFleet struct {
	Up      int          `json:"up"`
	Total   int          `json:"total"`
	Verdict *JSONVerdict `json:"verdict"` // the fleet's bottleneck; null before rules ran
	Stats   JSONStats    `json:"stats"`
	Models  []JSONModel  `json:"models"`
	Pools   []JSONPool   `json:"pools"` // the pools the configuration names (targets' pool:); empty: none
}

// JSONPool is a pool the configuration names, with its verdict.
type JSONPool struct {
	Pool      string       `json:"pool"`
	Endpoints int          `json:"endpoints"` // targets configured in it
	Verdict   *JSONVerdict `json:"verdict"`   // the pool's bottleneck
}

// JSONModel aggregates the endpoints serving one model.
type JSONModel struct {
	Model     string       `json:"model"`
	Endpoints int          `json:"endpoints"`
	Verdict   *JSONVerdict `json:"verdict"` // the pool's bottleneck
	Stats     JSONStats    `json:"stats"`
	// Router: the routers in front of the pool (Dynamo frontends), whose
	// queue is stats.queue.waiting; absent without one.
	Router *JSONPoolRouter `json:"router,omitempty"`
}

// JSONPoolRouter is the routers a pool is joined with and what they hold.
type JSONPoolRouter struct {
	Endpoints []string `json:"endpoints"`
	Queued    Num      `json:"queued"`
	Inflight  Num      `json:"inflight"`
}

// JSONRouterQueue is a router's numbers for one model.
type JSONRouterQueue struct {
	Model    string `json:"model"`
	Queued   Num    `json:"queued"`
	Inflight Num    `json:"inflight"`
}

// JSONEndpoint is one target.
type JSONEndpoint struct {
	Name          string            `json:"name"`
	State         string            `json:"state"` // pending, up, down, stale
	StateSince    *time.Time        `json:"state_since"`
	LastError     string            `json:"last_error,omitempty"`
	LastSuccess   *time.Time        `json:"last_success"`
	ScrapeSeconds Num               `json:"scrape_seconds"`
	RestartedAt   *time.Time        `json:"restarted_at"`
	Kind          string            `json:"kind"`           // engine, router, no-samples
	ServingEngine string            `json:"serving_engine"` // vLLM, SGLang: whose metric families it serves
	Generation    string            `json:"generation"`
	VersionRange  string            `json:"version_range"`
	VersionMin    string            `json:"version_min,omitempty"`
	VersionMax    string            `json:"version_max,omitempty"`
	Models        []string          `json:"models"`
	Warnings      []string          `json:"warnings"`
	Samples       int               `json:"samples"`
	ResidentBytes Num               `json:"resident_memory_bytes"`
	MaxNumSeqs    *int              `json:"max_num_seqs"`
	RouterQueues  []JSONRouterQueue `json:"router_queues,omitempty"` // a router's per-model queue (Dynamo's frontend)
	LoRA          *JSONLoRA         `json:"lora"`                    // null unless the server exposes lora_requests_info
	Sleep         *string           `json:"sleep_state"`             // awake, asleep; null when not exposed
	SleepLevel    string            `json:"sleep_level,omitempty"`
	Verdict       *JSONVerdict      `json:"verdict"` // which limit binds; null when not judged (down, not an engine)
	Stats         JSONStats         `json:"stats"`
	Engines       []JSONEngine      `json:"engines"`
	GPU           *JSONEndpointGPU  `json:"gpu"`      // null unless the endpoint was joined to local GPUs
	Restarts      []JSONRestart     `json:"restarts"` // within the last hour, oldest first
	Shifts        []JSONShift       `json:"shifts"`   // changes against the baselines within the last hour, oldest first
	Timeline      []JSONEvent       `json:"timeline"` // this endpoint's events, oldest first
}

// JSONEngine is one (model, engine) sub-series.
type JSONEngine struct {
	Model  string    `json:"model"`
	Engine string    `json:"engine"`
	Stats  JSONStats `json:"stats"`
}

// JSONStats are the four rows.
type JSONStats struct {
	WindowSeconds Num            `json:"window_seconds"`
	Latency       JSONLatency    `json:"latency"`
	Cache         JSONCache      `json:"cache"`
	Queue         JSONQueue      `json:"queue"`
	Throughput    JSONThroughput `json:"throughput"`
	// What the server exposes beyond the four rows; null when it does not.
	Speculative *JSONSpec       `json:"speculative"`
	KVTransfer  *JSONKVTransfer `json:"kv_transfer"`
}

// JSONSpec is speculative decoding over the window: accepted ÷ draft
// tokens, tokens a step yields (1 + accepted per draft; SGLang's accept
// length), drafts per engine step (Nums), and the share of drafts accepted
// at each position (index = position).
type JSONSpec struct {
	Nums               StatNums `json:"-"`
	AcceptedByPosition []Num    `json:"accepted_by_position"`
}

// JSONKVTransfer is P/D disaggregation's and KV offload's traffic (Nums);
// a rate is null when its family is not exposed.
type JSONKVTransfer struct {
	Nums StatNums `json:"-"`
}

// JSONLoRA is vllm:lora_requests_info: the adapter slots and the adapters
// running and waiting (per-adapter counts are not exposed).
type JSONLoRA struct {
	MaxLoRA int      `json:"max_lora"`
	Running []string `json:"running"`
	Waiting []string `json:"waiting"`
}

// JSONQuantiles are seconds; count is observations in the window.
type JSONQuantiles struct {
	P50   Num `json:"p50"`
	P90   Num `json:"p90"`
	P95   Num `json:"p95"`
	P99   Num `json:"p99"`
	Mean  Num `json:"mean"`
	Count Num `json:"count"`
	// The first and last finite bucket bounds: a percentile ≤ lowest_bound
	// was interpolated inside the first bucket, one = highest_bound fell in +Inf.
	LowestBound  Num `json:"lowest_bound"`
	HighestBound Num `json:"highest_bound"`
}

// quantileKeys are JSONQuantiles' members, `"p50":` …, in its order.
var quantileKeys = func() (keys [8]string) {
	t := reflect.TypeFor[JSONQuantiles]()
	for i := range t.NumField() {
		if t.Field(i).Type != reflect.TypeFor[Num]() {
			panic("JSONQuantiles holds a field other than a Num")
		}
		k, _ := json.Marshal(t.Field(i).Tag.Get("json"))
		keys[i] = string(k) + ":"
	}
	return keys
}()

// MarshalJSON writes the eight numbers in one slice, as encoding/json
// writes the struct: left to it, each number is a call of Num's
// MarshalJSON, a slice and a check of that slice (112 an endpoint, the
// latency row's; a third of the report's encoding at 2,000 endpoints).
func (q JSONQuantiles) MarshalJSON() ([]byte, error) {
	nums := [8]Num{q.P50, q.P90, q.P95, q.P99, q.Mean, q.Count, q.LowestBound, q.HighestBound}
	b := make([]byte, 0, 192)
	for i, n := range nums {
		b = append(b, ',')
		b = append(b, quantileKeys[i]...)
		b = n.appendJSON(b)
	}
	b[0] = '{'
	return append(b, '}'), nil
}

// JSONLatency is the latency row.
type JSONLatency struct {
	TTFT       JSONQuantiles `json:"ttft"`
	InterToken JSONQuantiles `json:"inter_token"`
	TPOT       JSONQuantiles `json:"tpot_per_request"`
	E2E        JSONQuantiles `json:"e2e"`
	Queue      JSONQuantiles `json:"queue"`
	Prefill    JSONQuantiles `json:"prefill"`
	Decode     JSONQuantiles `json:"decode"`
}

// JSONCache is the cache row: its numbers (Nums) and whether prefix
// caching is on.
type JSONCache struct {
	Nums          StatNums `json:"-"`
	PrefixCaching *bool    `json:"prefix_caching"`
}

// JSONQueue is the queue row: its numbers alone.
type JSONQueue struct {
	Nums StatNums `json:"-"`
}

// JSONThroughput is the throughput row: its numbers and the finish reasons.
type JSONThroughput struct {
	Nums   StatNums     `json:"-"`
	Finish []JSONFinish `json:"finish_reasons"`
}

// JSONFinish is one finish reason.
type JSONFinish struct {
	Reason string `json:"reason"`
	PerS   Num    `json:"per_s"`
	Share  Num    `json:"share"`
}

func jq(q diagnose.Quantiles) JSONQuantiles {
	return JSONQuantiles{Num(q.P50), Num(q.P90), Num(q.P95), Num(q.P99), Num(q.Mean), Num(q.Count), Num(q.Lowest), Num(q.Highest)}
}

// Stats converts derived stats to the JSON layout.
func Stats(s diagnose.Stats) JSONStats {
	var pc *bool
	switch s.PrefixCaching {
	case sources.TriYes:
		t := true
		pc = &t
	case sources.TriNo:
		f := false
		pc = &f
	}
	out := JSONStats{
		WindowSeconds: Num(s.Span.Seconds()),
		Latency: JSONLatency{TTFT: jq(s.TTFT), InterToken: jq(s.ITL), TPOT: jq(s.TPOT), E2E: jq(s.E2E),
			Queue: jq(s.Queue), Prefill: jq(s.Prefill), Decode: jq(s.Decode)},
		Cache:      JSONCache{Nums: statNums(&s, "cache"), PrefixCaching: pc},
		Queue:      JSONQueue{Nums: statNums(&s, "queue")},
		Throughput: JSONThroughput{Nums: statNums(&s, "throughput"), Finish: []JSONFinish{}},
	}
	for _, f := range s.Finish {
		out.Throughput.Finish = append(out.Throughput.Finish, JSONFinish{f.Reason, Num(f.PerSec), Num(f.Share)})
	}
	if !math.IsNaN(s.SpecAcceptRate) || !math.IsNaN(s.SpecAcceptLen) {
		out.Speculative = &JSONSpec{Nums: statNums(&s, "speculative"), AcceptedByPosition: []Num{}}
		for _, v := range s.SpecPosAccept {
			out.Speculative.AcceptedByPosition = append(out.Speculative.AcceptedByPosition, Num(v))
		}
	}
	if !math.IsNaN(s.KVXferFailRate) || !math.IsNaN(s.KVExpiredRate) || !math.IsNaN(s.KVOffloadRate) {
		out.KVTransfer = &JSONKVTransfer{Nums: statNums(&s, "kv_transfer")}
	}
	return out
}

// numPtr is v for a field that is absent when it does not apply and null
// when unknown.
func numPtr(v float64) *Num {
	n := Num(v)
	return &n
}

func tptr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// BuildJSONRun converts a frame into the JSON document, saying how the run went.
func BuildJSONRun(f *diagnose.Frame, vtopVersion string, st Status, run Run) JSONReport {
	r := JSONReport{
		Schema: SchemaVersion, VtopVersion: vtopVersion, GeneratedAt: f.Time.UTC(),
		WindowSeconds: f.Window.Seconds(), IntervalSeconds: f.Interval.Seconds(),
		Status: JSONStatus{Code: int(st), Text: st.String(), ElapsedSeconds: Num(run.Elapsed.Seconds()),
			Interrupted: run.Interrupted, NoAnswer: run.NoAnswer},
		Fleet:     JSONFleet{Up: f.Fleet.Up, Total: f.Fleet.Total, Verdict: Verdict(&f.Fleet.Verdict, true), Stats: Stats(f.Fleet.Stats), Models: []JSONModel{}, Pools: []JSONPool{}},
		Endpoints: []JSONEndpoint{},
		Findings:  Findings(f.Findings),
		Pending:   Findings(f.Pending),
		Groups:    []JSONGroup{},
		Problems:  f.Problems,
	}
	for _, g := range f.Groups {
		r.Groups = append(r.Groups, JSONGroup{g.Rule, g.Title, g.Severity.String(), g.Targets, g.Members})
	}
	for _, p := range f.Fleet.Pools {
		r.Fleet.Pools = append(r.Fleet.Pools, JSONPool{p.Pool, p.Endpoints, Verdict(&p.Verdict, true)})
	}
	for _, m := range f.Fleet.Models {
		jm := JSONModel{Model: m.Model, Endpoints: m.Endpoints, Verdict: Verdict(&m.Verdict, true), Stats: Stats(m.Stats)}
		if len(m.Routers) > 0 {
			jm.Router = &JSONPoolRouter{Endpoints: m.Routers, Queued: Num(m.RouterQueued), Inflight: Num(m.RouterInflight)}
		}
		r.Fleet.Models = append(r.Fleet.Models, jm)
	}
	timelines := diagnose.Timelines(f)
	for i, e := range f.Endpoints {
		je := JSONEndpoint{
			Name: e.Name, State: e.State.String(), StateSince: tptr(e.Since), LastError: e.LastError,
			LastSuccess: tptr(e.LastSuccess), ScrapeSeconds: Num(e.ScrapeDuration.Seconds()),
			RestartedAt: tptr(e.RestartedAt), Kind: e.Kind.String(), ServingEngine: e.Version.Server.String(), Generation: e.Version.Gen.String(),
			VersionRange: e.Version.String(), Models: orEmpty(e.Models), Warnings: orEmpty(e.Warnings),
			Samples: e.Samples, ResidentBytes: Num(e.RSS), Stats: Stats(e.Stats), Engines: []JSONEngine{},
			Verdict: Verdict(&e.Verdict, false),
		}
		if e.LastAttempt.IsZero() {
			je.ScrapeSeconds = Num(math.NaN())
		}
		if !e.Version.Min.IsZero() {
			je.VersionMin = e.Version.Min.String()
		}
		if !e.Version.Max.IsZero() {
			je.VersionMax = e.Version.Max.String()
		}
		if e.MaxNumSeqs > 0 {
			n := e.MaxNumSeqs
			je.MaxNumSeqs = &n
		}
		for _, s := range e.Subs {
			je.Engines = append(je.Engines, JSONEngine{s.Key.Model, s.Key.Engine, Stats(s.Stats)})
		}
		for _, q := range e.Router {
			je.RouterQueues = append(je.RouterQueues, JSONRouterQueue{q.Model, Num(q.Values[sources.RQueued]), Num(q.Values[sources.RInflight])})
		}
		if l := e.Lora; l != nil {
			je.LoRA = &JSONLoRA{MaxLoRA: l.MaxLora, Running: orEmpty(l.Running), Waiting: orEmpty(l.Waiting)}
		}
		if e.Stats.Sleep != diagnose.SleepUnknown {
			sl := e.Stats.Sleep.String()
			je.Sleep, je.SleepLevel = &sl, e.Stats.SleepLevel
		}
		je.GPU = EndpointGPUJSON(f, &e)
		je.Restarts, je.Shifts = restartsJSON(e.Restarts), shiftsJSON(e.Shifts)
		je.Timeline = Timeline(timelines[i])
		r.Endpoints = append(r.Endpoints, je)
	}
	r.Timeline = Timeline(diagnose.Timeline(f, ""))
	r.GPU, r.GPUs = GPUJSON(f)
	return r
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// WriteJSON writes the document, indented, as json.Encoder with
// SetIndent("", "  ") does, but a list field an element at a time: the
// encoder builds the whole document twice in memory (marshalled, then
// indented), ~100 MB for 2,000 endpoints' 15 MB.
func WriteJSON(w io.Writer, r JSONReport) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	v := reflect.ValueOf(&r).Elem() // addressable: lists are encoded an element's address at a time
	bw.WriteString("{")
	first := true
	for i := range v.NumField() {
		tag, opts, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if opts == "omitempty" && (v.Field(i).IsZero() || v.Field(i).Kind() == reflect.Slice && v.Field(i).Len() == 0) {
			continue
		}
		name, err := json.Marshal(tag)
		if err != nil {
			return err
		}
		if !first {
			bw.WriteByte(',')
		}
		first = false
		bw.WriteString("\n  ")
		bw.Write(name)
		bw.WriteString(": ")
		if err := writeIndented(bw, v.Field(i)); err != nil {
			return err
		}
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// writeIndented writes a top-level field's value at the document's second
// level of indentation, a non-empty list an element at a time.
func writeIndented(w *bufio.Writer, f reflect.Value) error {
	var buf []byte
	if f.Kind() != reflect.Slice || f.Len() == 0 {
		// One value each (the fleet, the status, …): encoding/json,
		// which also writes the plain float64s at this level (json-iterator
		// writes 1e-7 as 1e-07).
		b, err := json.Marshal(f.Interface())
		w.Write(appendIndent(buf, b, "  ", "  "))
		return err
	}
	w.WriteString("[\n")
	// One stream's buffer for every element, each passed by its address:
	// Marshal's copy of its result and the element's copy into an
	// interface were 2,000 endpoints' worth of garbage (~20 MB) on the
	// run's largest heap, each page of it new to the process.
	st := jsonc.BorrowStream(nil)
	defer jsonc.ReturnStream(st)
	for j := range f.Len() {
		st.SetBuffer(st.Buffer()[:0])
		st.WriteVal(f.Index(j).Addr().Interface())
		if st.Error != nil {
			return st.Error
		}
		b := st.Buffer()
		w.WriteString("    ")
		buf = appendIndent(buf[:0], b, "    ", "  ")
		w.Write(buf)
		if j < f.Len()-1 {
			w.WriteByte(',')
		}
		w.WriteByte('\n')
	}
	_, err := w.WriteString("  ]")
	return err
}

// appendIndent is json.Indent for what json.Marshal writes (valid JSON,
// no space outside strings): the same bytes, without json.Indent's
// scanner, a call through a state function per byte, which was half the
// JSON report's CPU (and a twelfth of the whole run) for 2,000 replicas.
func appendIndent(dst, src []byte, prefix, indent string) []byte {
	depth := 0
	open := false // after '{' or '[': an empty one stays "{}" or "[]"
	// A new line and its indentation, for depths up to 16 without a loop
	// (the report's deepest is 7).
	nl := []byte("\n" + prefix + strings.Repeat(indent, 16))
	newline := func() {
		if depth <= 16 {
			dst = append(dst, nl[:1+len(prefix)+depth*len(indent)]...)
			return
		}
		dst = append(dst, nl...)
		for range depth - 16 {
			dst = append(dst, indent...)
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		if open && c != '}' && c != ']' {
			open = false
			depth++
			newline()
		}
		switch c {
		case '"':
			// The string whole, to its closing quote; an escape's next
			// byte is never that quote.
			j := i + 1
			for {
				q := bytes.IndexByte(src[j:], '"')
				if q < 0 {
					j = len(src)
					break
				}
				if b := bytes.IndexByte(src[j:j+q], '\\'); b >= 0 {
					j += b + 2
					continue
				}
				j += q
				break
			}
			dst = append(dst, src[i:min(j+1, len(src))]...)
			i = j
		case '{', '[':
			dst = append(dst, c)
			open = true
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, c, ' ')
		case '}', ']':
			if open {
				open = false
			} else {
				depth--
				newline()
			}
			dst = append(dst, c)
		default:
			// A number or a literal, to the next structural byte.
			j := i + 1
			for j < len(src) && !jsonStructural[src[j]] {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j - 1
		}
	}
	return dst
}

// jsonStructural marks the bytes appendIndent acts on outside strings.
var jsonStructural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true, ',': true, ':': true}
