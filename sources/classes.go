package sources

import "github.com/prometheus/prometheus/model/textparse"

// A series seen for the first time costs a label parse (a label set of
// strings per series) and a classification. Behind a Prometheus server the
// replicas of one model expose the same series text once the server's
// target labels are stripped, differing only in values: at 2,000 replicas a
// first refresh parsed ~800,000 label sets (~145 MB of garbage) to learn
// what ~1,300 distinct series are. What a series resolves to depends on its
// text alone, so normalizers of many targets can share it.

// class is what a series line resolves to from its text: the same for
// every target that exposes the text.
type class struct {
	rare *entryRare // shared by the entries made from it; never written after
	le   float64
	sub  SubKey // the sub-series of an eSignal
	fam  int32
	kind entryKind
	part part
	pid  bool
}

// SeriesClasses remembers what series texts resolved to, for normalizers
// of targets whose expositions repeat each other's series. Bounded: when
// full it starts over, so a fleet of all-distinct series costs a lookup
// more per first sight, not memory. Not safe for concurrent use: give one
// to each goroutine that normalizes.
type SeriesClasses struct {
	m    map[uint64]*sharedClass
	max  int
	hits uint64 // first sights answered from m, for tests
}

type sharedClass struct {
	series string // the text, compared on a hit: keys are 64-bit hashes
	class
}

// NewSeriesClasses remembers up to max series.
func NewSeriesClasses(max int) *SeriesClasses {
	return &SeriesClasses{m: map[uint64]*sharedClass{}, max: max}
}

// firstSight classifies a series this target has not shown before: from
// n.Classes when another target showed the same text, else from its
// labels. Only the text parser's results are shared: its label sets follow
// from the line alone, but for the normalized le and quantile values of a
// histogram or summary, which classOf reads as numbers (1 and 1.0 alike).
func (n *Normalizer) firstSight(p textparse.Parser, series []byte, key uint64) class {
	cs := n.Classes
	if _, ok := p.(*textparse.PromParser); !ok {
		cs = nil
	}
	if cs != nil {
		if sc := cs.m[key]; sc != nil && sc.series == string(series) {
			cs.hits++
			return sc.class
		}
	}
	p.Labels(&n.lset)
	c := classOf(n.lset)
	if cs == nil {
		return c
	}
	if len(cs.m) >= cs.max {
		clear(cs.m)
	}
	cs.m[key] = &sharedClass{series: string(series), class: c}
	return c
}
