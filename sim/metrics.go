package sim

import (
	"sort"

	"github.com/vtop-dev/vtop/sources"
)

// hist is a classic histogram as prometheus_client keeps it: a count per
// bucket (not cumulative; the exposition accumulates), a sum and a count.
// A nil bounds slice means the release does not have the family.
type hist struct {
	bounds []float64 // upper bounds without +Inf, shared and read-only
	counts []float64 // len(bounds)+1, the last is +Inf
	sum    float64
	count  float64
}

// observe adds w observations of v, so a run of identical engine steps
// costs one call.
func (h *hist) observe(v, w float64) {
	if h.bounds == nil || w <= 0 {
		return
	}
	h.counts[sort.SearchFloat64s(h.bounds, v)] += w
	h.sum += v * w
	h.count += w
}

// metrics are the counters and histograms of one engine, indexed by the
// canonical IDs of sources.Metrics, so the exposition of any release reads
// the same numbers under that release's names.
type metrics struct {
	counters [sources.NumCounters]float64
	hists    [sources.NumHists]hist
	finished []float64 // by sources.FinishReasons index
	promptBy [3]float64
	specPos  []float64 // accepted draft tokens by position (expected values)
}

func newMetrics(p *Profile, maxModelLen int) metrics {
	var m metrics
	for i := range sources.Metrics {
		row := &sources.Metrics[i]
		if row.Role != sources.RoleHist || row.Optional || row.Server != p.Server || !row.ShownIn(p.Gen, p.Version) {
			continue
		}
		h := &m.hists[row.ID]
		if h.bounds == nil {
			h.bounds = sources.BucketBounds(row.Bucket, p.Version, maxModelLen)
			h.counts = make([]float64, len(h.bounds)+1)
		}
	}
	m.finished = make([]float64, len(sources.FinishReasons))
	return m
}

func (m *metrics) reset() {
	m.counters = [sources.NumCounters]float64{}
	for i := range m.hists {
		h := &m.hists[i]
		clear(h.counts)
		h.sum, h.count = 0, 0
	}
	clear(m.finished)
	m.promptBy = [3]float64{}
	clear(m.specPos)
}

func (m *metrics) observe(h sources.Hist, v, w float64) { m.hists[h].observe(v, w) }

func finishIndex(reason string) int {
	for i, f := range sources.FinishReasons {
		if f.Reason == reason {
			return i
		}
	}
	return 0
}

var (
	finishStop   = finishIndex("stop")
	finishLength = finishIndex("length")
	finishAbort  = finishIndex(sources.FinishAbort)
)
