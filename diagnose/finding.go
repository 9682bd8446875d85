package diagnose

import (
	"strconv"
	"strings"
	"time"
)

// Severity of a finding.
type Severity uint8

const (
	SevInfo Severity = iota
	SevWarning
	SevCritical
)

func (s Severity) String() string {
	return [...]string{"info", "warning", "critical"}[s]
}

// FindingState is where a finding is in the rule engine's state machine:
// pending (the condition holds, not yet for its hold) → firing → resolving
// (its premise no longer holds; shown with its age, its action withheld) →
// gone. The zero value is firing.
type FindingState uint8

const (
	FindingFiring    FindingState = iota // the condition held for its hold: act on it
	FindingPending                       // the condition holds, HeldFor of Hold so far
	FindingResolving                     // the premise no longer holds since ResolvingSince
)

func (s FindingState) String() string {
	return [...]string{"firing", "pending", "resolving"}[s]
}

// Finding is one diagnosed problem: what, where, since when, the evidence
// that made the rule fire, and what to change.
type Finding struct {
	Rule     string       // rule id, e.g. "kv_cache_thrashing"
	Severity Severity     // warning or critical (info for advisories)
	State    FindingState // pending, firing or resolving
	// HeldFor is how long the condition has held (pending: toward Hold;
	// firing: since FirstSeen). Hold is the hold it needs to fire, scaled
	// by how far past the threshold the data is.
	HeldFor time.Duration
	Hold    time.Duration
	// ResolvingSince: a resolving finding's premise stopped holding then;
	// it goes after the rule's resolve_for. Zero otherwise.
	ResolvingSince time.Time
	Target         string // endpoint name; the GPU rules: the endpoints holding the device, or "GPU n"
	Model          string // model, when the finding is about one
	Engine         string // data-parallel engine, when about one
	GPUs           []int  // indexes into Frame.GPU.GPUs, when about devices (the GPU rules)
	FirstSeen      time.Time
	LastSeen       time.Time
	Title          string     // "KV cache thrashing"
	Summary        Text       // one line of evidence: "preemptions 22/s, KV 97% for 3m"
	Evidence       []Evidence // the values and windows that made it fire
	Explain        Text       // a plain explanation, a few sentences
	Action         Text       // the recommendation in one line
	Flags          []FlagChange
	// Cause is the ID of the firing cause this symptom is grouped under
	// on its endpoint (its severity and action follow it); Symptoms are
	// the IDs of the symptoms grouped under this cause.
	Cause    string
	Symptoms []string
}

// Lever is the flag a finding's advice turns first ("" when it names
// none). Findings of one rule and title group across endpoints only with
// the same lever: a group shows one member's action, and a thrashing
// cache whose drafts bind is told to turn them off, not to lower
// --max-num-seqs as its neighbour is.
func (f *Finding) Lever() string {
	if len(f.Flags) == 0 {
		return ""
	}
	return f.Flags[0].Flag
}

// Evidence is one measured value behind a finding: a number with its unit
// (NaN when unknown), formatted by whoever shows it, or, for evidence that
// is not a number (a reason, a version, a list of names), its Text.
type Evidence struct {
	Name   string        // "KV usage"
	Num    float64       // 0.97; NaN when unknown, and for text evidence
	Unit   Unit          // UnitText ("") for text evidence
	Text   Text          // text evidence only: "V1 ≥0.8.4"
	Window time.Duration // the window it was measured over (0: instantaneous)
	// Lowest and Highest are a latency percentile's first and last finite
	// bucket bounds (0 when not a percentile): at or below Lowest it was
	// interpolated inside the first bucket, at Highest it fell in +Inf, so
	// it is only known to be ≤Lowest or ≥Highest.
	Lowest, Highest float64
}

// Numeric reports whether the evidence is one number with a unit.
func (e Evidence) Numeric() bool { return e.Unit != UnitText }

// Quantile reports whether the evidence is a latency percentile read from
// buckets (Lowest and Highest say its resolution).
func (e Evidence) Quantile() bool { return e.Lowest != 0 || e.Highest != 0 }

// Unit is what an evidence number counts. The names are the JSON report's.
type Unit string

const (
	UnitText        Unit = ""         // not a number
	UnitRatio       Unit = "ratio"    // 0..1
	UnitSeconds     Unit = "s"        // a latency or a span of time
	UnitCount       Unit = "count"    // requests, sequences, events
	UnitPerSec      Unit = "per_s"    // events per second
	UnitReqPerSec   Unit = "req/s"    // requests per second
	UnitTokPerSec   Unit = "tokens/s" // tokens per second
	UnitTokens      Unit = "tokens"   // a number of tokens
	UnitBytes       Unit = "bytes"
	UnitBytesPerSec Unit = "bytes/s" // growth of memory
	UnitNumber      Unit = "number"  // dimensionless: R², a load per slot, a setting's fraction
	UnitCelsius     Unit = "celsius"
	UnitWatts       Unit = "W"
	UnitMHz         Unit = "MHz"
)

// FlagChange is a concrete vLLM flag recommendation. From is empty when the
// current value is unknown; To may say what is missing instead of a number.
type FlagChange struct {
	Flag string // "--max-num-seqs"
	From Value  // 256
	To   Value  // 96, or words: "cannot compute: …"
	Why  Text   // how To was computed
	// Exact is the computed value To was rounded from, as operators set
	// the flag (0: To is not a rounded number): a shown value is held
	// against the evidence, not against the rounding's steps.
	Exact float64
	// Alt: an alternative to the change before it, not to apply with it:
	// each is computed on today's configuration, and applying one changes
	// what the others were computed from (recompute after).
	Alt bool
}

// EndpointGPU is the GPU share of one endpoint: the devices its processes
// hold memory on (joined through the local process tree).
type EndpointGPU struct {
	GPUs     []int   // indexes into Frame.GPU.GPUs
	MemBytes float64 // GPU memory held by the endpoint's processes; NaN unknown
	PIDs     []int   // the endpoint's process tree
	Note     string  // why no join was possible ("not on this host", "no process listens on :8000")
	Root     int     // the process holding the listening socket; 0 unknown
	RootName string  // its name
	UtilGPU  float64 // mean utilization of its GPUs, percent; NaN unknown
	// MemLimit is the host or cgroup memory its processes can use, bytes
	// (0 unknown: remote); MemLimitFrom says which.
	MemLimit     float64
	MemLimitFrom string
	Hist         []GPUPoint // the endpoint's share over time (MemUsed = MemBytes), oldest first; shared, read-only
	// Stale: some of its GPUs are stale (their source fails, the values
	// are the last read): its share adds no point to Hist and the rules
	// reading it see unknown.
	Stale bool
}

// ID names a finding uniquely within a frame: rule@target, with the model,
// data-parallel engine and GPUs when it is about them.
func (fd *Finding) ID() string {
	var b strings.Builder
	b.WriteString(fd.Rule)
	b.WriteByte('@')
	b.WriteString(fd.Target)
	if fd.Model != "" {
		b.WriteString("/" + fd.Model)
	}
	if fd.Engine != "" {
		b.WriteString("#" + fd.Engine)
	}
	for _, g := range fd.GPUs {
		b.WriteString(":gpu" + strconv.Itoa(g))
	}
	return b.String()
}

// Group is one rule firing on several endpoints: one fleet-wide problem
// rather than many. Members are the findings' IDs.
type Group struct {
	Rule     string
	Title    string
	Severity Severity
	Targets  []string
	Members  []string
}
