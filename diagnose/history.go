package diagnose

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// tracked are the histograms history keeps; the request-parameter ones are
// not shown or used by rules.
var tracked = [...]sources.Hist{
	sources.HTTFT, sources.HITL, sources.HTPOT, sources.HE2E, sources.HQueue,
	sources.HPrefill, sources.HDecode, sources.HInference, sources.HPromptLen,
	sources.HGenLen, sources.HIterTokens, sources.HPrefillKVComputed,
	sources.HKVBlockLifetime,
}

const nTracked = len(tracked)

// Tracked histogram slots, by meaning.
const (
	tTTFT = iota
	tITL
	tTPOT
	tE2E
	tQueue
	tPrefill
	tDecode
	tInference
	tPromptLen
	tGenLen
	tIter
	tPrefillKV
	tKVLifetime
)

// frame is one scrape of one sub-series with counters made monotonic:
// every counter and bucket carries the increase since vtop started, so the
// increase over any window is last - first, even across engine restarts.
type frame struct {
	t        time.Time
	counters [sources.NumCounters]float64
	hists    [nTracked]hframe
	labeled  [sources.NumLabeled][]sources.LabeledValue // counters corrected, gauges as read
	gauges   [sources.NumGauges]float64
}

type hframe struct {
	counts     []float64 // cumulative, corrected; nil = absent
	sum, count float64
	epoch      uint32 // bucket layout generation; frames of different epochs do not subtract
}

// corr tracks one counter's reset correction.
type corr struct {
	raw, offset, created float64
	seen                 bool
}

// step applies a new raw value and returns the corrected one and whether a
// reset was seen. Prometheus' rule: a decrease means the counter restarted
// from 0. A changed _created timestamp also means a restart, even when the new
// value is already above the old one (a restart between two scrapes).
func (c *corr) step(v, created float64) (float64, bool) {
	reset := false
	if c.seen && (v < c.raw || (created == created && c.created == c.created && created != c.created)) {
		c.offset += c.raw
		reset = true
	}
	c.raw, c.created, c.seen = v, created, true
	return v + c.offset, reset
}

type hcorr struct {
	bounds     []float64
	raw        []float64
	offset     []float64
	rawSum     float64
	rawCount   float64
	sumOff     float64
	countOff   float64
	created    float64
	epoch      uint32
	seen       bool
	offsetZero bool
}

// subHistory is the bounded history of one (model, engine) sub-series.
type subHistory struct {
	key      sources.SubKey
	frames   []frame
	counters [sources.NumCounters]corr
	hists    [nTracked]hcorr
	labeled  [sources.NumLabeled]map[string]*corr
	lastSeen time.Time
}

func newSubHistory(k sources.SubKey) *subHistory {
	h := &subHistory{key: k}
	for i := range h.labeled {
		h.labeled[i] = map[string]*corr{}
	}
	return h
}

// add appends a scrape. It reports a counter reset (an engine restart).
func (h *subHistory) add(t time.Time, s *sources.Sub, spacing, retain time.Duration, maxFrames int) bool {
	var f frame
	f.t = t
	reset := false
	f.gauges = s.Gauges
	for c := range f.counters {
		v := s.Counters[c]
		if math.IsNaN(v) {
			f.counters[c] = math.NaN()
			continue
		}
		cv, r := h.counters[c].step(v, s.Created[c])
		f.counters[c] = cv
		reset = reset || r
	}
	for i, id := range tracked {
		r := h.addHist(&f.hists[i], &h.hists[i], &s.Hists[id])
		reset = reset || r
	}
	for l := range f.labeled {
		list := s.Labeled[l]
		if len(list) == 0 {
			continue
		}
		out := make([]sources.LabeledValue, len(list))
		counter := l == int(sources.LFinished) || l == int(sources.LPromptSource) || l == int(sources.LAdmissionRejected)
		for i, lv := range list {
			out[i] = lv
			if counter && !math.IsNaN(lv.Value) {
				c := h.labeled[l][lv.Label]
				if c == nil {
					if len(h.labeled[l]) >= 64 {
						out[i].Value = math.NaN()
						continue
					}
					c = &corr{}
					h.labeled[l][lv.Label] = c
				}
				v, r := c.step(lv.Value, lv.Created)
				out[i].Value = v
				reset = reset || r
			}
		}
		f.labeled[l] = out
	}
	h.push(f, spacing, retain, maxFrames)
	h.lastSeen = t
	return reset
}

func (h *subHistory) addHist(dst *hframe, c *hcorr, src *sources.Histogram) bool {
	if !src.Present() {
		return false
	}
	reset := false
	if !c.seen || !slices.Equal(c.bounds, src.Bounds) {
		// A new layout (first scrape, or a restart into another release):
		// start a new epoch; windows never subtract across it.
		if c.seen {
			c.epoch++
		}
		c.bounds = src.Bounds
		c.offset = make([]float64, len(src.Bounds))
		c.sumOff, c.countOff = 0, 0
		c.offsetZero = true
	} else {
		restarted := src.Count < c.rawCount ||
			(src.Created == src.Created && c.created == c.created && src.Created != c.created)
		for i := range src.Counts {
			if src.Counts[i] < c.raw[i] {
				restarted = true
				break
			}
		}
		if restarted {
			// The whole histogram restarts together; correct every bucket.
			for i := range c.offset {
				c.offset[i] += c.raw[i]
			}
			if !math.IsNaN(c.rawSum) {
				c.sumOff += c.rawSum
			}
			c.countOff += c.rawCount
			c.offsetZero = false
			reset = true
		}
	}
	c.raw, c.rawSum, c.rawCount, c.created, c.seen = src.Counts, src.Sum, src.Count, src.Created, true
	if c.offsetZero {
		dst.counts = src.Counts // immutable snapshot data: share it
	} else {
		dst.counts = make([]float64, len(src.Counts))
		for i, v := range src.Counts {
			dst.counts[i] = v + c.offset[i]
		}
	}
	dst.sum = src.Sum + c.sumOff
	dst.count = src.Count + c.countOff
	dst.epoch = c.epoch
	return reset
}

// push appends a frame, thinning: while the newest frame is closer than
// spacing to the one before it, a new frame replaces it (the newest is always
// kept), so kept frames are spacing apart; frames older than retain go.
func (h *subHistory) push(f frame, spacing, retain time.Duration, maxFrames int) {
	n := len(h.frames)
	if n >= 2 && h.frames[n-1].t.Sub(h.frames[n-2].t) < spacing {
		h.frames[n-1] = f
	} else {
		h.frames = append(h.frames, f)
	}
	cut := 0
	limit := f.t.Add(-retain)
	// Keep one frame at or before the retention edge as the window anchor.
	for cut+1 < len(h.frames) && !h.frames[cut+1].t.After(limit) {
		cut++
	}
	if over := len(h.frames) - maxFrames; over > cut {
		cut = over
	}
	if cut > 0 {
		// Shift in place so the backing array does not creep forward forever.
		h.frames = append(h.frames[:0], h.frames[cut:]...)
		clear(h.frames[len(h.frames):cap(h.frames)])
	}
}

// window returns the frame indexes spanning [now-w, now]: b is the newest
// frame (which must lie inside the window), a the newest frame at or before
// the window start, or the oldest frame when history is shorter.
func (h *subHistory) window(now time.Time, w time.Duration) (a, b int, ok bool) {
	n := len(h.frames)
	if n < 2 {
		return 0, 0, false
	}
	b = n - 1
	start := now.Add(-w)
	if h.frames[b].t.Before(start) {
		return 0, 0, false
	}
	// frames are time-ordered: find the first frame after start.
	i := sort.Search(n, func(i int) bool { return h.frames[i].t.After(start) })
	a = max(i-1, 0)
	if a >= b {
		return 0, 0, false
	}
	return a, b, true
}

func (h *subHistory) latest() *frame {
	if len(h.frames) == 0 {
		return nil
	}
	return &h.frames[len(h.frames)-1]
}
