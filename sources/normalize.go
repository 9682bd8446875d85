package sources

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// DefaultMaxSamples bounds the samples read from one scrape. A data-parallel
// engine with 16 ranks and a few models exposes ~10k; far more means a
// misconfigured or hostile target.
const DefaultMaxSamples = 50_000

// DefaultMaxSubs bounds the (model, engine) sub-series kept from one target:
// a 16-rank data-parallel engine with a few models has under a hundred;
// thousands are a bug in the target, and each costs vtop history.
const DefaultMaxSubs = 256

// maxWarnings bounds the warnings one snapshot carries.
const maxWarnings = 16

// Normalizer turns /metrics bodies of one target into Snapshots. It keeps,
// per line of the previous body, what its series resolved to, so a steady
// endpoint parses only its changed values (lines.go); what a series text
// resolves to is shared with other targets (classes.go). Not safe for
// concurrent use: the poller owns one per target.
type Normalizer struct {
	MaxSamples int
	MaxSubs    int // sub-series kept; samples of more are ignored with a warning
	// Classes is where first-seen series are looked up before their labels
	// are parsed, and filed once resolved (see SeriesClasses); nil: the
	// process's, shared by every target it scrapes.
	Classes *SeriesClasses

	// own holds the classes of series read by a parser whose classes are
	// not shared (OpenMetrics, protobuf; see classFor), keyed by the 64-bit
	// hash of the raw series (seriesKey): a hit compares no bytes. Two
	// lines of one target sharing a hash (p ≈ 1e-14 for 500 series) would
	// share a class; the hash is seeded per process, so a target cannot aim
	// for that.
	own    map[uint64]ownClass
	slots  map[SubKey]*subAcc
	active []*subAcc
	last   *subAcc // the slot the previous sample fed, this scrape
	iter   uint32  // scrapes read; wraps after 136 years of 1 s polls
	st     *labels.SymbolTable
	lset   labels.Labels
	fp     bodyPrint // the previous body, for parsing only what changed
	trk    tracker
	full   bool // parse every body in full (what tests compare the incremental path with)
	// keepLines: the caller records the bodies' changes (see Changes).
	keepLines bool
	incr      uint64 // bodies read incrementally, for tests and benchmarks
	plain     uint64 // bodies read in the plain form (plain.go), for tests
	noPlain   bool   // read plain bodies with the text parser (what tests compare plain.go with)

	// per-scrape state
	present    []bool // by family index
	presentAny bool
	declared   int // vllm: families with a TYPE line
	router     int
	routerVals []RouterModel // this scrape's router numbers, in body order of first sight
	other      map[string]int
	help       Gen // what the HELP of num_requests_running says
	procs      [NumProcs]float64
	http       []LabeledValue // inference responses by status, summed over handlers
	cacheCfgs  []cacheCfgAt
	lora       *LoraInfo
	warnings   []string
	warnSeen   map[string]bool
	samples    int
	dups       int
	overCap    int // samples of sub-series beyond MaxSubs
	engineSeen bool
}

type cacheCfgAt struct {
	engine string
	cfg    *CacheConfig
}

type entryKind uint8

const (
	eIgnore entryKind = iota
	eSignal           // a gauge/counter/hist/labeled sample of a sub-series
	eProc
	eCacheInfo
	eLoraInfo
	eRouter
	eHTTP  // the API server's responses to an inference handler (rare.label: the status)
	eOther // another engine's metric
)

// entryRare holds what only a few series resolve to.
type entryRare struct {
	label string // value of the Labeled family's extra label
	other string // other engine name
	cfg   *CacheConfig
	cfgEn string
	lora  *LoraInfo
	bad   string // why the sample is unusable (sanitized), or ""
}

// subAcc is one sub-series of a target. Between scrapes it keeps its key
// and bucket layouts; what a scrape accumulates (~10 KB) is borrowed from
// subPool while the scrape runs.
type subAcc struct {
	iter     uint32
	key      SubKey
	prevBnds [NumHists][]float64 // last layout, to share Bounds between snapshots
	*subScratch
}

// subScratch accumulates one sub-series during a scrape.
type subScratch struct {
	sub     Sub
	gRank   [NumGauges]uint8 // rank+1 of the alias in use, 0 = unset
	cRank   [NumCounters]uint8
	hRank   [NumHists]uint8
	lRank   [NumLabeled]uint8
	hist    [NumHists]histAcc
	labeled [NumLabeled][]LabeledValue
}

var subPool = sync.Pool{New: func() any { return new(subScratch) }}

// done gives back what reading a body borrowed.
func (n *Normalizer) done() {
	n.releaseSubs()
	if !n.keepLines {
		n.fp.releaseLists()
	}
}

// releaseSubs gives back what this scrape's sub-series accumulated, once
// the snapshot holds copies of it.
func (n *Normalizer) releaseSubs() {
	for _, s := range n.active {
		sc := s.subScratch
		if sc == nil {
			continue
		}
		s.subScratch = nil
		sc.sub = Sub{}
		clear(sc.labeled[:])
		for i := range sc.hist {
			h := &sc.hist[i]
			if cap(h.les) > 1<<10 {
				h.les, h.counts = nil, nil // a huge histogram: not pooled for good
			}
		}
		subPool.Put(sc)
	}
}

type histAcc struct {
	les, counts []float64
	sum, count  float64
	created     float64
	pid         bool
}

// NewNormalizer returns a Normalizer with the default limits.
func NewNormalizer() *Normalizer {
	return &Normalizer{
		MaxSamples: DefaultMaxSamples,
		MaxSubs:    DefaultMaxSubs,
		slots:      map[SubKey]*subAcc{},
		st:         labels.NewSymbolTable(),
		present:    make([]bool, len(families)),
		other:      map[string]int{},
		warnSeen:   map[string]bool{},
	}
}

// ErrTooManySamples is returned when a scrape exceeds MaxSamples.
var ErrTooManySamples = errors.New("too many samples")

// parserOptions: an unknown Content-Type reads as the text format.
var parserOptions = textparse.ParserOptions{FallbackContentType: "text/plain"}

// Normalize parses one /metrics body. contentType is the response's
// Content-Type; an empty or unknown one falls back to the text format.
// Lines unchanged since the target's previous body are not parsed again
// (see lines.go); the snapshot is the one a full parse gives.
func (n *Normalizer) Normalize(body []byte, contentType string) (*Snapshot, error) {
	defer n.done()
	n.fp.rehash(body)
	n.begin()
	if err := nulLine(body); err != nil {
		n.sweep()
		n.fp.forget()
		return nil, err
	}
	handled, err := n.readChanged(body, contentType)
	if !handled {
		handled, err = n.readPlain(body, contentType)
	}
	if !handled {
		p, perr := textparse.New(body, contentType, n.st, parserOptions)
		if p == nil {
			n.fp.forget()
			return nil, fmt.Errorf("cannot parse Content-Type %q: %v", Sanitize(contentType, 60), perr)
		}
		n.startTrack(p, body, contentType)
		err = n.read(p)
		n.trk = tracker{} // holds no pooled body buffer
		n.sweepOwn()
	}
	if err != nil {
		// A failed scrape sweeps too: a target that churns label values and
		// always fails (over --max-samples, a parse error) must not grow.
		n.sweep()
		n.fp.forget()
		return nil, err
	}
	snap, err := n.finish()
	if err != nil {
		// The next body is compared with none: a failed scrape is recorded
		// as its error, so what follows it is recorded whole.
		n.fp.forget()
	}
	return snap, err
}

// nulLine refuses a body with a NUL byte at the start of a line: the
// text format's lexer takes it for the end of the input, so the lines
// after it would be dropped without a word (10 of 364 samples read). One
// memchr over a clean body.
func nulLine(body []byte) error {
	for off := 0; ; {
		i := bytes.IndexByte(body[off:], 0)
		if i < 0 {
			return nil
		}
		at := off + i
		if at == 0 || body[at-1] == '\n' {
			return fmt.Errorf("parse error: a NUL byte starts line %d (the answer is damaged; the text format would end there)", bytes.Count(body[:at], []byte{'\n'})+1)
		}
		off = at + 1
	}
}

func (n *Normalizer) begin() {
	n.iter++
	n.active = n.active[:0]
	n.last = nil
	clear(n.present)
	n.presentAny = false
	n.declared, n.router, n.samples, n.dups, n.overCap = 0, 0, 0, 0, 0
	n.routerVals = nil
	clear(n.other)
	n.help = GenUnknown
	for i := range n.procs {
		n.procs[i] = math.NaN()
	}
	n.http = nil // the snapshot keeps the previous one
	n.cacheCfgs = n.cacheCfgs[:0]
	n.lora = nil
	n.warnings = nil
	clear(n.warnSeen)
	n.engineSeen = false
}

var (
	helpRunV0    = []byte(helpV0Running)
	helpRunV1    = []byte(helpV1Running)
	errNoSamples = errors.New("no samples")
)

// ErrNotVLLM: the target answered with metrics, none of them vLLM's (another
// program on the port, another serving engine). Not an outage: its own state.
var ErrNotVLLM = errors.New("no vLLM metrics")

func (n *Normalizer) read(p textparse.Parser) error {
	seen := seenPool.Get().(map[uint64]struct{})
	defer func() {
		if len(seen) <= 4096 {
			clear(seen)
			seenPool.Put(seen)
		}
	}()
	_, text := p.(*textparse.PromParser)
	for {
		e, err := p.Next()
		if err == io.EOF {
			n.endTrack()
			n.fp.declared, n.fp.help = n.declared, n.help
			return nil
		}
		if err != nil {
			return fmt.Errorf("parse error: %s", Sanitize(err.Error(), 160))
		}
		switch e {
		case textparse.EntrySeries:
			if err := n.count(); err != nil {
				return err
			}
			series, _, v := p.Series()
			key := seriesKey(series)
			k := n.locate(series)
			// A line whose series is its line's in the previous body keeps
			// its class: no lookup among the shared classes (a lock, a map,
			// a comparison of the text), a fifth of vtop's part of a full
			// parse. Only the text parser's: others' own classes are kept
			// by classFor's use.
			c := n.prevClass(k, series, key)
			if c == nil || !text {
				c = n.classFor(p, series, key)
				if n.trk.unique {
					// The samples so far took their lines' previous classes:
					// distinct series, the set not kept until now.
					n.trk.unique = false
					for _, pc := range n.fp.ent[:n.trk.lastEntry+1] {
						if pc != nil {
							seen[pc.key] = struct{}{}
						}
					}
				}
			} else if n.trk.unique {
				n.record(k, c, false, v)
				n.apply(c, v)
				continue
			}
			// One map operation: the series is new when the set grew.
			seenBefore := len(seen)
			seen[key] = struct{}{}
			if len(seen) == seenBefore {
				// The same series line twice in one scrape: the first one is kept.
				n.record(k, c, true, v)
				n.dups++
				continue
			}
			n.record(k, c, false, v)
			n.apply(c, v)
		case textparse.EntryType:
			name, _ := p.Type()
			if declaresEngine(name) {
				n.declared++
			}
		case textparse.EntryHelp:
			name, help := p.Help()
			if isRunningFamily(name) {
				switch {
				case bytes.Equal(help, helpRunV0):
					n.help = GenV0
				case bytes.Equal(help, helpRunV1):
					n.help = GenV1
				}
			}
		case textparse.EntryHistogram:
			n.warn("native histograms are not read; expose classic buckets")
		}
	}
}

// count counts one sample against MaxSamples.
func (n *Normalizer) count() error {
	n.samples++
	if n.samples > n.MaxSamples {
		return fmt.Errorf("%w: more than %d (raise --max-samples if this is expected)", ErrTooManySamples, n.MaxSamples)
	}
	return nil
}

// seenPool recycles the series a full parse has seen, to find repeated ones.
var seenPool = sync.Pool{New: func() any { return map[uint64]struct{}{} }}

// classOf resolves a series seen for the first time from its labels alone,
// so what it returns holds for every target exposing that series (see
// SeriesClasses). Only this path looks at label values, and it sanitizes
// every one it keeps.
func classOf(ls labels.Labels) class {
	name := ls.Get(model.MetricNameLabel)
	var c class
	w, ok := byWire[name]
	if !ok {
		if o := otherEngine(name); o != "" {
			c.kind, c.rare = eOther, &entryRare{other: o}
		}
		return c
	}
	c.fam, c.part = int32(w.fam), w.part
	f := &families[w.fam]
	switch f.role {
	case RoleRouter:
		c.kind = eRouter
		if f.id != uint8(RNone) {
			c.sub.Model = KeyLabel(routerModel(ls), MaxLabelLen)
		}
		return c
	case RoleProc:
		c.kind = eProc
		return c
	case RoleHTTP:
		// Only inference handlers: /metrics, /health and unmatched paths
		// ("none") are not requests an engine would have served.
		if slices.Contains(InferenceHandlers, ls.Get(LabelHandler)) {
			c.kind = eHTTP
			if ls.Has(LabelStatus) {
				c.rare = &entryRare{label: Sanitize(ls.Get(LabelStatus), 16)}
			} else {
				c.rare = &entryRare{bad: fmt.Sprintf("%s has a series without its %s label (ignored)", f.name, LabelStatus)}
			}
		}
		return c
	case RoleCacheInfo:
		c.kind = eCacheInfo
		cfg, cfgEn := parseCacheConfig(ls)
		c.rare = &entryRare{cfg: cfg, cfgEn: cfgEn}
		return c
	case RoleLoraInfo:
		c.kind = eLoraInfo
		c.rare = &entryRare{lora: parseLora(ls)}
		return c
	}
	c.kind = eSignal
	model := ls.Get(LabelModel)
	if model == "" {
		model = ls.Get(LabelModelAlt)
	}
	c.sub = SubKey{Model: KeyLabel(model, MaxLabelLen), Engine: KeyLabel(ls.Get(Servers[f.server].EngineLabel), 16)}
	c.pid = ls.Has(LabelPID)
	if f.role == RoleLabeled {
		row := &Metrics[f.rows[0]]
		switch {
		case ls.Has(row.Label):
			c.rare = &entryRare{label: Sanitize(ls.Get(row.Label), 40)}
		case row.LabelAlt != "" && ls.Has(row.LabelAlt):
			c.rare = &entryRare{label: Sanitize(ls.Get(row.LabelAlt), 40)}
		default:
			// An unknown label layout: the family is unknown, never a
			// series with an empty label that reads as 0 of each kind.
			c.rare = &entryRare{bad: fmt.Sprintf("%s has a series without its %s label (ignored: read as unknown)", f.name, row.Label)}
		}
	}
	if c.part == partBucket {
		le, err := strconv.ParseFloat(ls.Get(LabelLe), 64)
		if err != nil || math.IsNaN(le) {
			c.rare = &entryRare{bad: fmt.Sprintf("%s has a bucket with le=%q", f.name, Sanitize(ls.Get(LabelLe), 20))}
		}
		c.le = le
	}
	return c
}

// slotOf is the slot of this target's sub-series that a signal's sample
// feeds, or nil when the target has MaxSubs others this scrape. Resolved
// per sample, in body order, on either path: classes are shared, slots
// are the target's.
func (n *Normalizer) slotOf(c *class) *subAcc {
	if s := n.last; s != nil && s.key == c.sub {
		return s
	}
	slot := n.slots[c.sub]
	if slot == nil || slot.iter != n.iter {
		if len(n.active) >= n.MaxSubs {
			// Counted among this scrape's sub-series: stale slots of an earlier
			// scrape are swept at its end and must not lock new ones out,
			// nor take a place beyond the bound (a body read after one
			// whose sub-series came in another order kept MaxSubs+1).
			return nil
		}
		if slot == nil {
			slot = &subAcc{key: c.sub}
			n.slots[c.sub] = slot
		}
	}
	n.last = slot
	return slot
}

func (n *Normalizer) apply(en *class, v float64) {
	switch en.kind {
	case eIgnore:
		return
	case eOther:
		n.other[en.rare.other]++
		return
	case eRouter:
		n.router++
		if id := RouterValue(families[en.fam].id); id != RNone && en.part == partValue {
			n.applyRouter(en.sub.Model, id, v)
		}
		return
	case eProc:
		n.present[en.fam] = true
		if en.part == partValue && finite(v) {
			n.procs[families[en.fam].id] = v
		}
		return
	case eHTTP:
		n.applyHTTP(en, v)
		return
	case eCacheInfo:
		n.present[en.fam] = true
		n.cacheCfgs = append(n.cacheCfgs, cacheCfgAt{en.rare.cfgEn, en.rare.cfg})
		return
	case eLoraInfo:
		n.present[en.fam] = true
		n.lora = en.rare.lora
		return
	}
	s := n.slotOf(en)
	if s == nil {
		n.overCap++
		return
	}
	if en.rare != nil && en.rare.bad != "" {
		n.warn(en.rare.bad)
		return
	}
	n.present[en.fam] = true
	n.presentAny = true
	if s.iter != n.iter {
		n.resetSlot(s)
	}
	if s.sub.Key.Engine != "" {
		n.engineSeen = true
	}
	f := &families[en.fam]
	switch f.role {
	case RoleGauge:
		n.applyGauge(s, Gauge(f.id), f, en, v)
	case RoleCounter:
		id := Counter(f.id)
		if !takeRank(&s.cRank[id], f.rank) {
			return
		}
		if s.cRank[id] != f.rank+1 {
			s.cRank[id] = f.rank + 1
			s.sub.Counters[id], s.sub.Created[id] = math.NaN(), math.NaN()
		}
		if en.part == partCreated {
			s.sub.Created[id] = v
			return
		}
		if !validCounter(v) {
			n.warn(fmt.Sprintf("%s is %v; counters must be finite and ≥0 (ignored)", f.name, v))
			return
		}
		if en.pid && !math.IsNaN(s.sub.Counters[id]) {
			v += s.sub.Counters[id]
		}
		s.sub.Counters[id] = v
	case RoleHist:
		n.applyHist(s, Hist(f.id), f, en, v)
	case RoleLabeled:
		id := Labeled(f.id)
		if !takeRank(&s.lRank[id], f.rank) {
			return
		}
		if s.lRank[id] != f.rank+1 {
			s.lRank[id] = f.rank + 1
			s.labeled[id] = s.labeled[id][:0]
		}
		label := en.rare.label // a labeled series without its label has rare.bad, seen above
		list := s.labeled[id]
		i := slices.IndexFunc(list, func(lv LabeledValue) bool { return lv.Label == label })
		if i < 0 {
			list = append(list, LabeledValue{Label: label, Value: math.NaN(), Created: math.NaN()})
			i = len(list) - 1
		}
		if en.part == partCreated {
			list[i].Created = v
		} else if f.kind == KindCounter && !validCounter(v) {
			n.warn(fmt.Sprintf("%s{%s} is %v; counters must be finite and ≥0 (ignored)", f.name, label, v))
		} else if finite(v) {
			if en.pid && !math.IsNaN(list[i].Value) {
				v = pidMerge(f.kind, list[i].Value, v)
			}
			list[i].Value = v
		}
		s.labeled[id] = list
	}
}

// routerModel is the model a router's series is about: Dynamo labels it
// model; model_name as the engines do is read too.
func routerModel(ls labels.Labels) string {
	if m := ls.Get(LabelModelAlt); m != "" {
		return m
	}
	return ls.Get(LabelModel)
}

// applyRouter adds a router's number for model: series that differ in
// other labels (several frontends' instances) sum.
func (n *Normalizer) applyRouter(model string, id RouterValue, v float64) {
	if !finite(v) || v < 0 {
		n.warn(fmt.Sprintf("a router's %s is %v (shown as unknown)", [...]string{"", "queue", "in-flight count", "max_num_seqs"}[id], v))
		return
	}
	i := slices.IndexFunc(n.routerVals, func(r RouterModel) bool { return r.Model == model })
	if i < 0 {
		r := RouterModel{Model: model}
		for k := range r.Values {
			r.Values[k] = math.NaN()
		}
		n.routerVals = append(n.routerVals, r)
		i = len(n.routerVals) - 1
	}
	// Counts sum; a setting is each worker's, the same however many
	// frontends say it.
	switch x := &n.routerVals[i].Values[id]; {
	case math.IsNaN(*x):
		*x = v
	case id == RMaxNumSeqs:
		*x = max(*x, v)
	default:
		*x += v
	}
}

func (n *Normalizer) applyGauge(s *subAcc, id Gauge, f *family, en *class, v float64) {
	if !takeRank(&s.gRank[id], f.rank) {
		return
	}
	if s.gRank[id] != f.rank+1 {
		s.gRank[id] = f.rank + 1
		s.sub.Gauges[id] = math.NaN()
	}
	if !finite(v) {
		n.warn(fmt.Sprintf("%s is %v (shown as unknown)", f.name, v))
		return
	}
	if (id == GRunning || id == GWaiting || id == GSwapped) && v < 0 {
		// A count of requests below zero is an engine bug; exporting it
		// would pull fleet sums down.
		n.warn(fmt.Sprintf("%s%s is negative (%g; shown as unknown)", f.name, engineSel(s.sub.Key.Engine), v))
		return
	}
	if id == GKVUsage || id == GCPUKVUsage {
		// vllm-ascend#10048 shows negative usage on a DP rank: a bug in the
		// engine, not a number to average into the fleet.
		if v < 0 || v > 1+1e-9 {
			n.warn(fmt.Sprintf("%s{engine=%q} is %.4g, outside 0..1 (shown as unknown)", f.name, s.sub.Key.Engine, v))
			return
		}
	}
	if en.pid && !math.IsNaN(s.sub.Gauges[id]) {
		v = math.Max(v, s.sub.Gauges[id])
	}
	s.sub.Gauges[id] = v
}

// pidMerge combines one sub-series' values exposed once per API-server
// process. Counters add up; for gauges only one process holds the live value
// and the others report stale zeros (vLLM PR #28792), so the largest wins.
func pidMerge(k Kind, a, b float64) float64 {
	if k == KindCounter {
		return a + b
	}
	return math.Max(a, b)
}

func (n *Normalizer) applyHist(s *subAcc, id Hist, f *family, en *class, v float64) {
	if !takeRank(&s.hRank[id], f.rank) {
		return
	}
	h := &s.hist[id]
	if s.hRank[id] != f.rank+1 {
		s.hRank[id] = f.rank + 1
		h.les, h.counts = h.les[:0], h.counts[:0]
		h.sum, h.count, h.created = math.NaN(), math.NaN(), math.NaN()
	}
	h.pid = h.pid || en.pid
	switch en.part {
	case partBucket:
		h.les = append(h.les, en.le)
		h.counts = append(h.counts, v)
	case partSum:
		h.sum = v
	case partCount:
		h.count = v
	case partCreated:
		h.created = v
	}
}

// takeRank reports whether a sample of alias rank r may feed a signal whose
// alias in use is cur (rank+1, 0 = none yet): a better alias replaces a worse one.
func takeRank(cur *uint8, r uint8) bool {
	return *cur == 0 || r+1 <= *cur
}

func (n *Normalizer) resetSlot(s *subAcc) {
	if s.subScratch == nil {
		s.subScratch = subPool.Get().(*subScratch)
	}
	s.sub = newSub(s.key)
	s.iter = n.iter
	s.gRank, s.cRank, s.hRank, s.lRank = [NumGauges]uint8{}, [NumCounters]uint8{}, [NumHists]uint8{}, [NumLabeled]uint8{}
	for i := range s.hist {
		h := &s.hist[i]
		h.les, h.counts, h.pid = h.les[:0], h.counts[:0], false
	}
	for i := range s.labeled {
		s.labeled[i] = nil
	}
	n.active = append(n.active, s)
}

func (n *Normalizer) warn(msg string) {
	if n.warnSeen[msg] || len(n.warnings) >= maxWarnings {
		return
	}
	n.warnSeen[msg] = true
	n.warnings = append(n.warnings, msg)
}

// applyHTTP adds one inference handler's count of a status to the
// endpoint's: the handlers and methods are summed (a rejection is one
// whichever route refused it). _created is not kept: a sum's creation
// time means nothing, and a restart shows as the sum falling.
func (n *Normalizer) applyHTTP(en *class, v float64) {
	if en.rare.bad != "" {
		n.warn(en.rare.bad)
		return
	}
	if en.part != partValue {
		return
	}
	f := &families[en.fam]
	if !validCounter(v) {
		n.warn(fmt.Sprintf("%s is %v; counters must be finite and ≥0 (ignored)", f.name, v))
		return
	}
	n.present[en.fam] = true
	for i := range n.http {
		if n.http[i].Label == en.rare.label {
			n.http[i].Value += v
			return
		}
	}
	if len(n.http) < maxStatuses {
		n.http = append(n.http, LabeledValue{Label: en.rare.label, Value: v, Created: math.NaN()})
	}
}

// maxStatuses bounds the statuses one scrape keeps: the grouped form has
// five, the ungrouped one the codes a server answers (a dozen).
const maxStatuses = 32

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func validCounter(v float64) bool { return finite(v) && v >= 0 }

func (n *Normalizer) finish() (*Snapshot, error) {
	n.sweep()
	if n.dups > 0 {
		n.warn(fmt.Sprintf("%d duplicate series ignored (first one kept)", n.dups))
	}
	if n.overCap > 0 {
		n.warn(fmt.Sprintf("too many models/engines: %d samples beyond the first %d sub-series ignored", n.overCap, n.MaxSubs))
	}
	snap := &Snapshot{Samples: n.samples, Proc: n.procs, Lora: n.lora, Router: n.routerVals, HTTP: n.http}
	slices.SortFunc(snap.HTTP, func(a, b LabeledValue) int { return strings.Compare(a.Label, b.Label) })
	slices.SortFunc(snap.Router, func(a, b RouterModel) int { return strings.Compare(a.Model, b.Model) })
	switch {
	case n.router > 0 && !n.hasEngineCore():
		snap.Kind = KindRouter
	case !n.presentAny:
		if n.declared > 0 {
			snap.Kind = KindNoSamples
		} else {
			return nil, n.noVLLMError()
		}
	}
	slices.SortFunc(n.active, func(a, b *subAcc) int {
		if c := strings.Compare(a.sub.Key.Model, b.sub.Key.Model); c != 0 {
			return c
		}
		return compareEngine(a.sub.Key.Engine, b.sub.Key.Engine)
	})
	snap.Subs = make([]Sub, 0, len(n.active))
	for _, s := range n.active {
		n.finishSub(s)
		snap.Subs = append(snap.Subs, s.sub)
	}
	n.attachCacheConfigs(snap)
	snap.Version = n.detectVersion(snap)
	snap.Warnings = n.warnings
	return snap, nil
}

// hasEngineCore reports whether the scrape carries engine scheduler state, so
// a router that also re-exports engine gauges is still recognised as a router.
func (n *Normalizer) hasEngineCore() bool {
	for _, s := range n.active {
		if !math.IsNaN(s.sub.Gauges[GRunning]) && len(s.hist[HTTFT].les) > 0 {
			return true
		}
	}
	return false
}

func (n *Normalizer) noVLLMError() error {
	best, cnt := "", 0
	for name, c := range n.other {
		if c > cnt || (c == cnt && name < best) {
			best, cnt = name, c
		}
	}
	if best != "" {
		return fmt.Errorf("%w: this looks like %s (%d of its samples); vtop reads vLLM's and SGLang's metrics", ErrNotVLLM, best, cnt)
	}
	if n.samples == 0 {
		return fmt.Errorf("%w: the response has no metric samples", errNoSamples)
	}
	return fmt.Errorf("%w among %d samples (is this the vLLM API server's port?)", ErrNotVLLM, n.samples)
}

// sweep drops sub-series not seen in this scrape, so a target that churns
// label values cannot grow vtop's memory. Steady targets skip the walk.
func (n *Normalizer) sweep() {
	if len(n.slots) > len(n.active) {
		for k, s := range n.slots {
			if s.iter != n.iter {
				delete(n.slots, k)
			}
		}
	}
}

// sweepOwn drops the target's own classes its last full parse did not use.
func (n *Normalizer) sweepOwn() {
	if len(n.own) > n.samples-n.dups {
		for k, oc := range n.own {
			if oc.iter != n.iter {
				delete(n.own, k)
			}
		}
	}
}

func (n *Normalizer) finishSub(s *subAcc) {
	// Histograms: sort buckets, merge per-pid duplicates, check the shape.
	total := 0
	for i := range s.hist {
		total += len(s.hist[i].les)
	}
	backing := make([]float64, 0, total)
	for i := range s.hist {
		h := &s.hist[i]
		if len(h.les) == 0 {
			if s.hRank[i] != 0 {
				n.warn(fmt.Sprintf("%s has _sum/_count but no buckets (ignored)", FamilyName(RoleHist, uint8(i))))
			}
			continue
		}
		name := FamilyName(RoleHist, uint8(i))
		if !sortedFloats(h.les) {
			sortPairs(h.les, h.counts)
		}
		h.les, h.counts = n.mergeEqualBounds(h.les, h.counts, h.pid, name)
		if problem := histProblem(h.les, h.counts); problem != "" {
			n.warn(fmt.Sprintf("%s %s (ignored)", name, problem))
			continue
		}
		bounds := s.prevBnds[i]
		if !slices.Equal(bounds, h.les) {
			bounds = sharedBounds(h.les)
			s.prevBnds[i] = bounds
		}
		start := len(backing)
		backing = append(backing, h.counts...)
		count := h.count
		if math.IsNaN(count) || count != h.counts[len(h.counts)-1] {
			// _count must equal the +Inf bucket; the bucket is what quantiles use.
			count = h.counts[len(h.counts)-1]
		}
		s.sub.Hists[i] = Histogram{
			Bounds:  bounds,
			Counts:  backing[start:len(backing):len(backing)],
			Sum:     h.sum,
			Count:   count,
			Created: h.created,
		}
	}
	for i := range s.labeled {
		if len(s.labeled[i]) > 0 {
			s.sub.Labeled[i] = slices.Clone(s.labeled[i])
			slices.SortFunc(s.sub.Labeled[i], func(a, b LabeledValue) int { return strings.Compare(a.Label, b.Label) })
		}
	}
}

// mergeEqualBounds handles a bound listed twice: per-pid copies add up,
// anything else is a duplicate series and the first one stays.
func (n *Normalizer) mergeEqualBounds(les, counts []float64, pid bool, name string) ([]float64, []float64) {
	w := 0
	for r := 0; r < len(les); r++ {
		if w > 0 && les[r] == les[w-1] {
			if pid {
				counts[w-1] += counts[r]
			} else {
				n.dups++
			}
			continue
		}
		les[w], counts[w] = les[r], counts[r]
		w++
	}
	return les[:w], counts[:w]
}

// histProblem describes why a classic histogram cannot be used, or "".
func histProblem(les, counts []float64) string {
	if !math.IsInf(les[len(les)-1], 1) {
		return "has no +Inf bucket"
	}
	for i, c := range counts {
		if !validCounter(c) {
			return fmt.Sprintf("has bucket le=%g = %v", les[i], c)
		}
		if i > 0 && c < counts[i-1] {
			return fmt.Sprintf("buckets decrease (le=%g: %g > le=%g: %g)", les[i-1], counts[i-1], les[i], c)
		}
	}
	return ""
}

func sortedFloats(s []float64) bool {
	for i := 1; i < len(s); i++ {
		if s[i] < s[i-1] {
			return false
		}
	}
	return true
}

// sortPairs sorts buckets by bound, in place (a server's answer lists le
// values as text, "+Inf" first and "10" before "2.5"); les holds no NaN
// (such a bucket is refused), so any stable order is this one.
func sortPairs(les, counts []float64) {
	if len(les) > 32 {
		sort.Stable(bucketPairs{les, counts})
		return
	}
	// A histogram's dozen or two buckets: an insertion sort on the two
	// slices, without sort.Stable's calls through an interface (a sixth
	// of normalizing a 2,000-replica refresh went to sorting buckets).
	for i := 1; i < len(les); i++ {
		for j := i; j > 0 && les[j] < les[j-1]; j-- {
			les[j], les[j-1] = les[j-1], les[j]
			counts[j], counts[j-1] = counts[j-1], counts[j]
		}
	}
}

type bucketPairs struct{ les, counts []float64 }

func (p bucketPairs) Len() int           { return len(p.les) }
func (p bucketPairs) Less(i, j int) bool { return p.les[i] < p.les[j] }
func (p bucketPairs) Swap(i, j int) {
	p.les[i], p.les[j] = p.les[j], p.les[i]
	p.counts[i], p.counts[j] = p.counts[j], p.counts[i]
}

// compareEngine orders engine labels numerically when they are numbers.
func compareEngine(a, b string) int {
	ai, ea := strconv.Atoi(a)
	bi, eb := strconv.Atoi(b)
	if ea == nil && eb == nil {
		return ai - bi
	}
	return strings.Compare(a, b)
}

// attachCacheConfigs gives each sub-series the cache config of its engine.
// V1 labels cache_config_info with engine (≥0.9.0); V0 and early V1 expose
// one config for the whole endpoint.
func (n *Normalizer) attachCacheConfigs(snap *Snapshot) {
	if len(n.cacheCfgs) == 0 {
		return
	}
	for i := range snap.Subs {
		s := &snap.Subs[i]
		for _, c := range n.cacheCfgs {
			if c.engine == s.Key.Engine || c.engine == "" {
				s.Cache = c.cfg
				if c.engine == s.Key.Engine {
					break
				}
			}
		}
	}
}

func parseCacheConfig(ls labels.Labels) (*CacheConfig, string) {
	c := &CacheConfig{GPUMemUtil: math.NaN(), SwapSpaceBytes: math.NaN()}
	engine := ""
	ls.Range(func(l labels.Label) {
		switch l.Name {
		case model.MetricNameLabel:
			return
		case LabelEngine:
			engine = Sanitize(l.Value, 16)
			return
		case CCBlockSize:
			c.BlockSize = atoiOrZero(l.Value)
		case CCNumGPUBlocks:
			c.NumGPUBlocks = atoiOrZero(l.Value)
		case CCNumCPUBlocks:
			c.NumCPUBlocks = atoiOrZero(l.Value)
		case CCGPUMemUtil:
			if f, err := strconv.ParseFloat(l.Value, 64); err == nil && f > 0 && f <= 1 {
				c.GPUMemUtil = f
			}
		case CCPrefixCaching:
			switch strings.ToLower(l.Value) {
			case "true":
				c.PrefixCaching = TriYes
			case "false":
				c.PrefixCaching = TriNo
			}
		case CCCacheDtype:
			c.CacheDtype = Sanitize(l.Value, 24)
		case CCSwapSpaceBytes:
			if f, err := strconv.ParseFloat(l.Value, 64); err == nil && f >= 0 {
				c.SwapSpaceBytes = f
			}
		}
		if len(c.Labels) < 64 {
			c.Labels = append(c.Labels, Label{Sanitize(l.Name, 48), Sanitize(l.Value, 48)})
		}
	})
	return c, engine
}

// atoiOrZero reads an integer label ("850", "850.0"); anything else ("None") is 0.
func atoiOrZero(s string) int {
	if i, err := strconv.Atoi(s); err == nil && i > 0 {
		return i
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 && f < math.MaxInt32 && f == math.Trunc(f) {
		return int(f)
	}
	return 0
}

func parseLora(ls labels.Labels) *LoraInfo {
	split := func(s string) []string {
		var out []string
		for _, a := range strings.Split(s, ",") {
			if a = strings.TrimSpace(a); a != "" && len(out) < 32 {
				out = append(out, Sanitize(a, 48))
			}
		}
		return out
	}
	return &LoraInfo{
		MaxLora: atoiOrZero(ls.Get(LabelMaxLora)),
		Running: split(ls.Get(LabelRunLora)),
		Waiting: split(ls.Get(LabelWaitLora)),
	}
}

// engineSel names an engine in a warning ({engine="1"}), or nothing when the
// target has one engine.
func engineSel(e string) string {
	if e == "" {
		return ""
	}
	return fmt.Sprintf("{engine=%q}", e)
}
