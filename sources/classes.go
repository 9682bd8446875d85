package sources

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unique"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// A series seen for the first time costs a label parse (a label set of
// strings per series) and a classification. The replicas of one model expose
// the same series text, differing only in values (scraped directly, or
// behind a Prometheus server once its target labels are stripped): at 2,000
// replicas a first refresh parsed ~800,000 label sets (~145 MB of garbage)
// to learn what ~1,300 distinct series are, and 1,000 targets kept a
// resolved entry per series each (~31 MB). What a series resolves to
// depends on its text alone, so the targets share it: a target keeps a
// pointer per line to its class (lines.go), not an entry per series.

// class is what a series text resolves to: the same for every target that
// exposes the text. Shared between targets and goroutines, so never
// written after it is made.
type class struct {
	key  uint64     // seriesKey of the text
	rare *entryRare // never written after either
	le   float64
	sub  SubKey                // the sub-series of an eSignal
	subH unique.Handle[SubKey] // keeps sub's interned strings the ones later classes get
	slen int32                 // the text's length in bytes
	fam  int32
	kind entryKind
	part part
	pid  bool
}

// SeriesClasses remembers what series texts resolved to, for normalizers
// of targets whose expositions repeat each other's series. Bounded: when
// full it starts over, so a fleet of all-distinct series costs a lookup
// more per first sight, not memory (targets keep the classes of their own
// lines). Safe for concurrent use; only first sights (full parses) use it.
type SeriesClasses struct {
	mu   sync.RWMutex
	m    map[uint64]sharedClass
	max  int
	hits atomic.Uint64 // first sights answered from m, for tests
}

type sharedClass struct {
	series string // the text, compared on a hit: keys are 64-bit hashes
	*class
}

// NewSeriesClasses remembers up to max series.
func NewSeriesClasses(max int) *SeriesClasses {
	return &SeriesClasses{m: map[uint64]sharedClass{}, max: max}
}

// processClasses serves every normalizer given no SeriesClasses of its own:
// all targets a process scrapes directly. 32k series are ~7 MB at most.
var processClasses = NewSeriesClasses(1 << 15)

func (cs *SeriesClasses) get(key uint64, series []byte) *class {
	cs.mu.RLock()
	sc := cs.m[key]
	cs.mu.RUnlock()
	if sc.class == nil || sc.series != string(series) {
		return nil
	}
	cs.hits.Add(1)
	return sc.class
}

func (cs *SeriesClasses) put(series []byte, c *class) {
	cs.mu.Lock()
	if len(cs.m) >= cs.max {
		clear(cs.m)
	}
	cs.m[c.key] = sharedClass{series: string(series), class: c}
	cs.mu.Unlock()
}

// ownClass is a class only this target uses (see classFor), and the last
// scrape that used it.
type ownClass struct {
	c    *class
	iter uint32
}

// classFor resolves a series of a full parse. Only the text parser's
// classes are shared: its label sets follow from the line alone, but for
// the normalized le and quantile values of a histogram or summary, which
// classOf reads as numbers (1 and 1.0 alike). Other parsers' classes are
// the target's own, kept while its bodies show them.
func (n *Normalizer) classFor(p textparse.Parser, series []byte, key uint64) *class {
	if _, ok := p.(*textparse.PromParser); ok {
		cs := n.Classes
		if cs == nil {
			cs = processClasses
		}
		if c := cs.get(key, series); c != nil {
			return c
		}
		c := n.classify(p, series, key)
		cs.put(series, c)
		return c
	}
	if oc, ok := n.own[key]; ok {
		n.own[key] = ownClass{oc.c, n.iter}
		return oc.c
	}
	c := n.classify(p, series, key)
	if n.own == nil {
		n.own = map[uint64]ownClass{}
	}
	n.own[key] = ownClass{c, n.iter}
	return c
}

// classify resolves a series from its labels.
func (n *Normalizer) classify(p textparse.Parser, series []byte, key uint64) *class {
	p.Labels(&n.lset)
	c := classOf(n.lset)
	n.lset = labels.EmptyLabels() // holds no target's label text between scrapes
	c.key, c.slen = key, int32(min(len(series), math.MaxInt32))
	if c.kind == eSignal {
		// The classes of one sub-series share its key's strings, so the
		// per-sample check that a sample feeds the previous sample's slot
		// (slotOf) compares pointers, not model names.
		c.subH = unique.Make(c.sub)
		c.sub = c.subH.Value()
	}
	return &c
}

// Bucket layouts are shared the same way: every replica of a model exposes
// its histograms with the same bounds, and a snapshot's Bounds are
// read-only, so targets keep one copy of each layout, not one each
// (~2 KB a target; history keeps references to them too).
var layouts = struct {
	mu sync.RWMutex
	m  map[uint64][]float64
}{m: map[uint64][]float64{}}

// maxLayouts bounds the layouts remembered; when full it starts over.
const maxLayouts = 1 << 12

// sharedBounds returns a read-only copy of les, bit for bit, shared with
// other targets that have the same layout.
func sharedBounds(les []float64) []float64 {
	var h maphash.Hash
	h.SetSeed(lineSeed)
	var b [8]byte
	for _, le := range les {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(le))
		h.Write(b[:])
	}
	key := h.Sum64()
	layouts.mu.RLock()
	got := layouts.m[key]
	layouts.mu.RUnlock()
	if sameBits(got, les) {
		return got
	}
	got = slices.Clip(slices.Clone(les))
	layouts.mu.Lock()
	if len(layouts.m) >= maxLayouts {
		clear(layouts.m)
	}
	layouts.m[key] = got
	layouts.mu.Unlock()
	return got
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) || a == nil {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}
