package diagnose

import (
	"iter"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// tracked are the histograms history keeps: those a statistic reads. The
// request-parameter ones, inference time, prefill KV computed and KV block
// lifetime are neither shown nor used by rules; kept, they cost a fifth of
// history's bucket counts.
var tracked = [...]sources.Hist{
	sources.HTTFT, sources.HITL, sources.HTPOT, sources.HE2E, sources.HQueue,
	sources.HPrefill, sources.HDecode, sources.HPromptLen,
	sources.HGenLen, sources.HIterTokens,
}

const nTracked = len(tracked)

// counted are the counters history keeps (subHistory.totals): those a
// statistic reads (acc.rates). Every counter is still corrected, so a
// reset of any one is a restart; the other eight (external prefix cache,
// multimodal cache, recomputed prompt tokens, speculative decoding) are
// never read.
var counted = [...]sources.Counter{
	sources.CPromptTokens, sources.CGenTokens, sources.CPreemptions,
	sources.CPrefixQueries, sources.CPrefixHits, sources.CPromptCached,
	sources.CSpecDrafts, sources.CSpecDraftTokens, sources.CSpecAccepted,
}

// xferCounters are P/D and KV-offload counters, which only servers with a
// KV connector expose: kept as a labeled family (xfer, labelled by
// xferLabels), which costs nothing while absent, not as columns of every
// sub-series' totals.
var xferCounters = [...]sources.Counter{sources.CKVTransferFailed, sources.CKVExpired, sources.CKVOffloadBytes}

var xferLabels = [...]string{"failed", "expired", "offload"}

const nCounted = len(counted)

// kept is the first of a tracked histogram's cols columns (the buckets,
// then _count) its count ring keeps: of the generation lengths only the
// mean is read (_sum over _count), so their buckets are not kept; of the
// prompt lengths the mean and the share above the last finite bound
// (vLLM ends that layout at the largest 1-2-5 value ≤ --max-model-len:
// prompts there are long for the context the server allows), so the last
// finite bucket, +Inf's and _count.
func kept(i, cols int) int {
	switch {
	case i == tPromptLen && cols >= 3:
		return cols - 3
	case i == tPromptLen || i == tGenLen:
		return cols - 1
	}
	return 0
}

// Tracked histogram slots, by meaning.
const (
	tTTFT = iota
	tITL
	tTPOT
	tE2E
	tQueue
	tPrefill
	tDecode
	tPromptLen
	tGenLen
	tIter
)

// frame is one scrape of one sub-series with counters made monotonic:
// every counter and bucket carries the increase since vtop started, so the
// increase over any window is last - first, even across engine restarts.
// Counters and bucket counts are not in the frame: they live in the
// sub-series' count rings (totals, counts), at the frame's ring slot.
// Gauges are read only at the newest frame, so they are not in frames but
// in the sub-series (subHistory.gauges); labeled counters (finish and
// rejection reasons) are in its label rings, at the frame's slot too.
type frame struct {
	ns int64 // time, Unix nanoseconds (a time.Time is three words)
	// Tracked histograms' _sum, and which of them were present (bit i).
	// Which bucket layout a frame's counts are in is not kept per frame:
	// a layout's frames follow one another (hcorr.epochSeq).
	hsum [nTracked]float64
	hhas uint16
}

// has reports whether tracked histogram i was present in the frame.
func (f *frame) has(i int) bool { return f.hhas&(1<<i) != 0 }

// corr tracks one counter's reset correction.
type corr struct {
	raw, offset, created float64
	seen                 bool
	// at is 1 + the sequence number of the frame it was last stepped at.
	at uint64
}

// step applies a new raw value at frame seq and returns the corrected one
// and whether a reset was seen. Prometheus' rule: a decrease means the
// counter restarted from 0. A changed _created timestamp also means a
// restart, even when the new value is already above the old one (a restart
// between two scrapes). A series absent since before the history's last
// reset (resetAt: 1 + its frame's sequence number, 0 none) is corrected
// but not reported: it restarted with the rest and comes back as its
// process creates it (vLLM V0 creates a finish reason's series at its
// first finish, seconds after a restart, and one restart read as three: a
// crash loop).
func (c *corr) step(v, created float64, seq, resetAt uint64) (float64, bool) {
	reset := false
	if c.seen && (v < c.raw || (created == created && c.created == c.created && created != c.created)) {
		c.offset += c.raw
		reset = c.at >= resetAt
	}
	c.raw, c.created, c.seen, c.at = v, created, true, seq+1
	return v + c.offset, reset
}

// hcorr tracks one histogram's reset correction. raw and offset have a
// column per bucket and one for _count, which the count ring keeps like a
// bucket (a whole number that only grows, no wider than the +Inf bucket).
type hcorr struct {
	bounds  []float64
	raw     []float64 // the buckets, then _count
	offset  []float64 // the same; nil until a reset
	rawSum  float64
	sumOff  float64
	created float64
	// epochSeq is the sequence number (subHistory.seq0 + index) of the
	// first frame in the current layout: frames before it are of older
	// layouts and do not subtract from the current one's.
	epochSeq uint64
	seen     bool
}

// subHistory is the bounded history of one (model, engine) sub-series: a
// ring of frames that doubles to its size for the window while the first
// window fills (and grows after only if polls come faster than the
// interval), so a full window costs no more memory than the one before.
type subHistory struct {
	key sources.SubKey
	frameRing
	counts   [nTracked]countRing
	totals   countRing // the counted counters, corrected (flat)
	counters [sources.NumCounters]corr
	hists    [nTracked]hcorr
	finished labelRing // finished_reason counters, corrected
	rejected labelRing // admission rejections by reason, corrected
	specPos  labelRing // speculative tokens accepted by draft position, corrected
	xfer     labelRing // xferCounters present, corrected
	lastSeen time.Time
	// resetAt is 1 + the sequence number of the newest frame a reset was
	// seen at, 0 none (see corr.step).
	resetAt uint64

	// The newest scrape's point-in-time signals.
	gauges        [sources.NumGauges]float64
	waitingReason []sources.LabeledValue
	sleepState    []sources.LabeledValue
}

// frameRing is a ring of frames numbered as they are added, which a
// history places its scrapes in: a sub-series' (subHistory), an
// endpoint's API-server statuses (statusHistory). It doubles to its size
// for the window while the first window fills.
type frameRing struct {
	ring     []frame // capacity = len(ring); frame i (oldest first) is ring[(start+i)%len]
	start, n int
	seq0     uint64 // sequence number of frame 0: frames are numbered as they are added
	full     int    // the ring's size for a whole window, reached by doubling from firstRing
}

func newFrameRing(capacity int) frameRing {
	capacity = max(capacity, 2)
	return frameRing{full: capacity, ring: make([]frame, min(capacity, firstRing))}
}

func newSubHistory(k sources.SubKey, capacity int) *subHistory {
	h := &subHistory{key: k, frameRing: newFrameRing(capacity)}
	h.totals.reset(nCounted, len(h.ring), true)
	return h
}

// statusHistory is an endpoint's own history of its API server's
// responses by status, corrected for resets: frames and that one labeled
// family (a subHistory's fixed arrays cost ~4 KiB an endpoint).
type statusHistory struct {
	frameRing
	status   labelRing
	lastSeen time.Time
}

func newStatusHistory(capacity int) *statusHistory {
	return &statusHistory{frameRing: newFrameRing(capacity)}
}

// add appends a scrape (list nil: the scrape had none, so the window
// ending at it has no rate). A counter reset is the API server
// restarting, which the engine's own counters already tell.
func (h *statusHistory) add(t time.Time, list []sources.LabeledValue, spacing, retain time.Duration, maxFrames int) {
	slot := h.place(t, spacing, retain, maxFrames, h.grow)
	h.ring[slot] = frame{ns: t.UnixNano()}
	h.status.put(slot, len(h.ring), h.seq0+uint64(h.n-1), 0, list, h.status.live(&h.frameRing))
	h.lastSeen = t
}

func (h *statusHistory) grow(capacity int) {
	h.status.remap(h.moveTo(capacity), capacity)
}

// firstRing is the ring a new sub-series starts with: a target that invents
// model names each scrape (each a sub-series seen once, up to MaxSubs of
// them) must not allocate a whole window's ring for every name. A steady
// sub-series doubles to its full size within the first window.
const firstRing = 8

// slot is the ring index of frame i; at returns it.
func (h *frameRing) slot(i int) int  { return (h.start + i) % len(h.ring) }
func (h *frameRing) at(i int) *frame { return &h.ring[h.slot(i)] }
func (h *frameRing) dropOldest()     { h.start, h.n, h.seq0 = (h.start+1)%len(h.ring), h.n-1, h.seq0+1 }
func (h *frameRing) newest() *frame  { return h.at(h.n - 1) }

// add appends a scrape. It reports a counter reset (an engine restart).
func (h *subHistory) add(t time.Time, s *sources.Sub, spacing, retain time.Duration, maxFrames int) bool {
	slot := h.place(t, spacing, retain, maxFrames)
	f := &h.ring[slot]
	*f = frame{ns: t.UnixNano()}
	h.gauges = s.Gauges
	// immutable snapshot data: shared, not copied
	h.waitingReason, h.sleepState = s.Labeled[sources.LWaitingReason], s.Labeled[sources.LSleepState]
	reset := false
	seq := h.seq0 + uint64(h.n-1)
	var corrected [sources.NumCounters]float64
	for c, v := range s.Counters {
		if math.IsNaN(v) {
			corrected[c] = math.NaN()
			continue
		}
		cv, r := h.counters[c].step(v, s.Created[c], seq, h.resetAt)
		corrected[c] = cv
		if r {
			reset, h.resetAt = true, seq+1
		}
	}
	var totals [nCounted]float64
	for j, c := range counted {
		totals[j] = corrected[c]
	}
	h.totals.put(slot, totals[:], nil, h.older())
	for i, id := range tracked {
		if h.addHist(slot, i, &s.Hists[id]) {
			reset, h.resetAt = true, seq+1
		}
	}
	r1 := h.finished.put(slot, len(h.ring), seq, h.resetAt, s.Labeled[sources.LFinished], h.finished.live(&h.frameRing))
	r2 := h.rejected.put(slot, len(h.ring), seq, h.resetAt, s.Labeled[sources.LAdmissionRejected], h.rejected.live(&h.frameRing))
	r3 := h.specPos.put(slot, len(h.ring), seq, h.resetAt, s.Labeled[sources.LSpecAcceptedPos], h.specPos.live(&h.frameRing))
	var xfer []sources.LabeledValue
	for i, c := range xferCounters {
		if !math.IsNaN(s.Counters[c]) {
			xfer = append(xfer, sources.LabeledValue{Label: xferLabels[i], Value: s.Counters[c], Created: s.Created[c]})
		}
	}
	if xfer != nil || len(h.xfer.labels) > 0 {
		slices.SortFunc(xfer, func(a, b sources.LabeledValue) int { return strings.Compare(a.Label, b.Label) })
		reset = h.xfer.put(slot, len(h.ring), seq, h.resetAt, xfer, h.xfer.live(&h.frameRing)) || reset
	}
	reset = reset || r1 || r2 || r3
	if reset {
		h.resetAt = seq + 1
	}
	h.lastSeen = t
	return reset
}

// place makes room for a frame at t and returns its ring slot, thinning:
// while the newest frame is closer than spacing to the one before it, a new
// frame replaces it (the newest is always kept), so kept frames are spacing
// apart; frames older than retain go, keeping one at or before the
// retention edge as the window anchor.
func (h *subHistory) place(t time.Time, spacing, retain time.Duration, maxFrames int) int {
	return h.frameRing.place(t, spacing, retain, maxFrames, h.grow)
}

// place is subHistory's place for any ring; grow moves the history's
// rings into a larger one.
func (h *frameRing) place(t time.Time, spacing, retain time.Duration, maxFrames int, grow func(capacity int)) int {
	limit := t.Add(-retain)
	for h.n >= 2 && h.at(1).ns <= limit.UnixNano() {
		h.dropOldest()
	}
	if h.n >= 2 && time.Duration(h.newest().ns-h.at(h.n-2).ns) < spacing {
		return h.slot(h.n - 1)
	}
	if h.n == len(h.ring) {
		switch {
		case len(h.ring) < h.full:
			grow(min(2*len(h.ring), h.full))
		case len(h.ring) < maxFrames:
			grow(min(len(h.ring)+len(h.ring)/4+1, maxFrames))
		default:
			h.dropOldest()
		}
	}
	h.n++
	return h.slot(h.n - 1)
}

// grow moves the ring into a larger one (polls faster than the interval the
// capacity was sized for, or a longer window).
func (h *subHistory) grow(capacity int) {
	slots := h.moveTo(capacity)
	for i := range h.counts {
		h.counts[i].remap(slots, capacity)
	}
	h.totals.remap(slots, capacity)
	h.finished.remap(slots, capacity)
	h.rejected.remap(slots, capacity)
	h.specPos.remap(slots, capacity)
	h.xfer.remap(slots, capacity)
}

// moveTo moves the frames into a ring of capacity, oldest first, and
// returns the slots they had (what the history's other rings remap).
func (h *frameRing) moveTo(capacity int) []int {
	ring := make([]frame, capacity)
	slots := make([]int, h.n)
	for i := range h.n {
		slots[i] = h.slot(i)
		ring[i] = h.ring[slots[i]]
	}
	h.ring, h.start = ring, 0
	return slots
}

// addHist stores tracked histogram i of a scrape at ring slot slot.
func (h *subHistory) addHist(slot, i int, src *sources.Histogram) bool {
	f, c := &h.ring[slot], &h.hists[i]
	if !src.Present() {
		return false
	}
	reset := false
	if !c.seen || !slices.Equal(c.bounds, src.Bounds) {
		// A new layout (first scrape, or a restart into another release):
		// start a new epoch; windows never subtract across it.
		c.epochSeq = h.seq0 + uint64(h.n-1) // this frame's
		c.bounds = src.Bounds
		c.raw = make([]float64, len(src.Bounds)+1)
		c.offset, c.sumOff = nil, 0
		h.counts[i].reset(len(c.raw)-kept(i, len(c.raw)), len(h.ring), false)
	} else {
		restarted := src.Count < c.raw[len(src.Bounds)] ||
			(src.Created == src.Created && c.created == c.created && src.Created != c.created)
		for k := range src.Counts {
			if src.Counts[k] < c.raw[k] {
				restarted = true
				break
			}
		}
		if restarted {
			// The whole histogram restarts together; correct every
			// bucket and the count.
			if c.offset == nil {
				c.offset = make([]float64, len(c.raw))
			}
			for k := range c.offset {
				c.offset[k] += c.raw[k]
			}
			if !math.IsNaN(c.rawSum) {
				c.sumOff += c.rawSum
			}
			reset = true
		}
	}
	// raw is vtop's own copy: the snapshot's counts are not kept past it.
	copy(c.raw, src.Counts)
	c.raw[len(src.Bounds)] = src.Count
	c.rawSum, c.created, c.seen = src.Sum, src.Created, true
	from, offset := kept(i, len(c.raw)), c.offset
	if offset != nil {
		offset = offset[from:]
	}
	h.counts[i].put(slot, c.raw[from:], offset, func(yield func(int) bool) {
		for j := range h.n {
			if h.inEpoch(j, i) && !yield(h.slot(j)) {
				return
			}
		}
	})
	f.hhas |= 1 << i
	f.hsum[i] = src.Sum + c.sumOff
	return reset
}

// older lists the slots of the frames before the newest.
func (h *subHistory) older() iter.Seq[int] {
	return func(yield func(int) bool) {
		for j := range h.n - 1 {
			if !yield(h.slot(j)) {
				return
			}
		}
	}
}

// inEpoch reports whether frame j holds tracked histogram i in its current
// bucket layout.
func (h *subHistory) inEpoch(j, i int) bool {
	return h.at(j).has(i) && h.seq0+uint64(j) >= h.hists[i].epochSeq
}

// window returns the frame indexes spanning [now-w, now]: b is the newest
// frame (which must lie inside the window), a the newest frame at or before
// the window start, or the oldest frame when history is shorter.
func (h *frameRing) window(now time.Time, w time.Duration) (a, b int, ok bool) {
	n := h.n
	if n < 2 {
		return 0, 0, false
	}
	b = n - 1
	start := now.Add(-w)
	if h.at(b).ns < start.UnixNano() {
		return 0, 0, false
	}
	// frames are time-ordered: find the first frame after start.
	i := sort.Search(n, func(i int) bool { return h.at(i).ns > start.UnixNano() })
	a = max(i-1, 0)
	if a >= b {
		return 0, 0, false
	}
	return a, b, true
}
