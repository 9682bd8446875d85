package diagnose

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// acc holds per-second rates and current gauges of one or more sub-series
// over a window. Merging two accs is the aggregation primitive: counter and
// bucket rates add up (Prometheus' sum by (le) (rate(...))), gauges add or
// weight, so fleet and engine aggregates are as exact as one engine's numbers.
type acc struct {
	span    time.Duration
	engines int

	rates   [sources.NumCounters]float64 // NaN: unknown
	hists   [nTracked]histRate
	finish  []labeledRate
	reject  []labeledRate // admission rejections by reason
	specPos []labeledRate // speculative tokens accepted by draft position
	xfer    []labeledRate // xferCounters, by xferLabels
	http    []labeledRate // the API server's responses by status (endpoints' own)
	// SGLang's speculative gauges (and V0's acceptance rate): sums and
	// engines reporting a nonzero value (0: no speculation configured).
	specRateG, specLenG   float64
	specRateGN, specLenGN int
	// sleep: engines reporting asleep / awake; paused: engines paused /
	// not (both 0 when the release does not say).
	asleep, awake, paused, unpaused int
	sleepLevel                      string // the deepest sleep_state set to 1

	running, waiting, swapped float64
	waitCap, waitDef          float64
	kvWeighted, kvCap         float64 // Σ usage×capacity, Σ capacity, over engines with known capacity
	kvPlain                   float64 // Σ usage over engines without capacity
	kvPlainN, kvKnownN        int
	kvMax                     float64
	cpuKV                     float64
	prefixGauge, prefixGaugeN float64
	capTokens, blocks         float64
	blockSize                 float64 // NaN mixed, 0 none yet
	gpuMemUtil                float64
	prefixYes, prefixNo       int
}

type histRate struct {
	bounds []float64
	rates  []float64 // cumulative per-second bucket rates
	sum    float64   // rate of _sum
	count  float64   // rate of _count
	obs    float64   // observations in the window
	// top is the last finite bound of a histogram whose buckets are not
	// all kept (the prompt lengths'), over the rate of observations above
	// it (NaN: layouts that differ); 0 and 0 where not kept.
	top, over float64
}

type labeledRate struct {
	label string
	rate  float64
}

func newAcc() acc {
	a := acc{kvMax: math.NaN(), cpuKV: math.NaN(), gpuMemUtil: math.NaN(),
		running: math.NaN(), waiting: math.NaN(), swapped: math.NaN(), waitCap: math.NaN(), waitDef: math.NaN()}
	for i := range a.rates {
		a.rates[i] = math.NaN()
	}
	return a
}

// nanAdd adds b into a treating NaN as "nothing yet".
func nanAdd(a, b float64) float64 {
	switch {
	case math.IsNaN(b):
		return a
	case math.IsNaN(a):
		return b
	}
	return a + b
}

// NaNMin is the smaller of a and b, the other when one is NaN (unknown).
func NaNMin(a, b float64) float64 {
	switch {
	case math.IsNaN(b):
		return a
	case math.IsNaN(a):
		return b
	}
	return math.Min(a, b)
}

// NaNMax is the larger of a and b, the other when one is NaN (unknown).
func NaNMax(a, b float64) float64 {
	switch {
	case math.IsNaN(b):
		return a
	case math.IsNaN(a):
		return b
	}
	return math.Max(a, b)
}

// Sets of tracked histograms (bit i: tracked[i]) an acc folds in: all of
// them, or what a sparkline point draws (sparkStats: the p95s, and E2E's
// _count for the request rate of releases without finish reasons).
const (
	allHists   = 1<<nTracked - 1
	sparkHists = 1<<tTTFT | 1<<tITL | 1<<tE2E | 1<<tQueue
)

// addSub folds one sub-series' window [a, b] of history h into the acc,
// of its histograms those in the set hists. cache is the sub-series'
// current cache config (capacity for KV weighting).
func (x *acc) addSub(h *subHistory, a, b int, cache *sources.CacheConfig, hists uint16) {
	fa, fb := h.at(a), h.at(b)
	dt := time.Duration(fb.ns - fa.ns)
	x.span = max(x.span, dt)
	x.engines++
	secs := dt.Seconds()
	var d [nCounted]float64
	h.totals.flatDiffs(h.slot(b), h.slot(a), d[:])
	for j, c := range counted {
		if !math.IsNaN(d[j]) && secs > 0 {
			x.rates[c] = nanAdd(x.rates[c], d[j]/secs)
		}
	}
	for i := range x.hists {
		if hists&(1<<i) != 0 {
			x.hists[i].add(h, a, b, i)
		}
	}
	x.finish = h.finished.addRates(x.finish, &h.frameRing, a, b, secs)
	x.reject = h.rejected.addRates(x.reject, &h.frameRing, a, b, secs)
	x.specPos = h.specPos.addRates(x.specPos, &h.frameRing, a, b, secs)
	x.xfer = h.xfer.addRates(x.xfer, &h.frameRing, a, b, secs)
	x.addGauges(h, cache)
}

// addGauges folds the newest values of the point-in-time signals.
func (x *acc) addGauges(h *subHistory, cache *sources.CacheConfig) {
	g := &h.gauges
	x.running = nanAdd(x.running, g[sources.GRunning])
	x.waiting = nanAdd(x.waiting, g[sources.GWaiting])
	x.swapped = nanAdd(x.swapped, g[sources.GSwapped])
	for _, lv := range h.waitingReason {
		switch lv.Label {
		case sources.WaitCapacity:
			x.waitCap = nanAdd(x.waitCap, lv.Value)
		case sources.WaitDeferred:
			x.waitDef = nanAdd(x.waitDef, lv.Value)
		}
	}
	x.cpuKV = NaNMax(x.cpuKV, g[sources.GCPUKVUsage])
	for _, lv := range h.sleepState {
		switch {
		case lv.Label == sources.SleepAwake && lv.Value == 0:
			x.asleep++
		case lv.Label == sources.SleepAwake && lv.Value > 0:
			x.awake++
		case lv.Value > 0 && lv.Label > x.sleepLevel:
			x.sleepLevel = lv.Label // weights_offloaded < discard_all
		}
	}
	switch p := g[sources.GPaused]; {
	case p > 0:
		x.paused++
	case p == 0:
		x.unpaused++
	}
	if v := g[sources.GSpecAcceptRate]; v > 0 {
		x.specRateG += v
		x.specRateGN++
	}
	if v := g[sources.GSpecAcceptLen]; v > 0 {
		x.specLenG += v
		x.specLenGN++
	}
	if hr := g[sources.GPrefixHitRateGPU]; hr >= 0 { // -1: caching off
		x.prefixGauge += hr
		x.prefixGaugeN++
	} else if hr < 0 {
		x.prefixNo++
	}
	capTok := float64(cache.CapacityTokens())
	// SGLang has no cache_config_info: its pool's size is a gauge.
	poolTok := capTok == 0 && g[sources.GKVTokensMax] > 0
	if poolTok {
		capTok = g[sources.GKVTokensMax]
		x.capTokens += capTok
	}
	if kv := g[sources.GKVUsage]; !math.IsNaN(kv) {
		x.kvMax = NaNMax(x.kvMax, kv)
		if capTok > 0 {
			x.kvWeighted += kv * capTok
			x.kvCap += capTok
			x.kvKnownN++
		} else {
			x.kvPlain += kv
			x.kvPlainN++
		}
	}
	if cache != nil {
		if capTok > 0 && !poolTok {
			x.capTokens += capTok
			x.blocks += float64(cache.NumGPUBlocks)
		}
		switch {
		case cache.BlockSize <= 0:
		case x.blockSize == 0:
			x.blockSize = float64(cache.BlockSize)
		case x.blockSize != float64(cache.BlockSize):
			x.blockSize = math.NaN()
		}
		x.gpuMemUtil = NaNMax(x.gpuMemUtil, cache.GPUMemUtil)
		switch cache.PrefixCaching {
		case sources.TriYes:
			x.prefixYes++
		case sources.TriNo:
			x.prefixNo++
		}
	}
}

func (r *histRate) add(h *subHistory, a, b, i int) {
	fb := h.at(b)
	if !h.inEpoch(b, i) {
		return
	}
	// The window may start before the current bucket layout (a restart into
	// another release): move its start to the layout's first frame.
	for a < b && !h.inEpoch(a, i) {
		a++
	}
	if a >= b {
		return
	}
	fa := h.at(a)
	secs := time.Duration(fb.ns - fa.ns).Seconds()
	if secs <= 0 {
		return
	}
	bounds := h.hists[i].bounds
	cr := &h.counts[i]
	from := kept(i, len(bounds)+1)
	if len(bounds)+1-from != int(cr.stride) { // the buckets kept, then _count
		return
	}
	var rates []float64 // nil: the buckets are not kept, only _count
	var last [2]float64 // the last finite bucket and +Inf's, where kept
	var dst []float64
	if from == 0 && i != tPromptLen {
		rates = make([]float64, len(bounds))
		dst = rates
	} else {
		// The prompt lengths' kept columns are the last finite bucket
		// and +Inf's even where that is every bucket (a layout of one
		// finite bound): their rates are never whole buckets, so an acc
		// merging another layout's prompt lengths has none to add.
		dst = last[:min(len(bounds)-from, len(last))]
	}
	obs := cr.diffs(h.slot(b), h.slot(a), dst)
	for k := range rates {
		rates[k] /= secs
	}
	other := histRate{bounds: bounds, rates: rates,
		sum: (fb.hsum[i] - fa.hsum[i]) / secs, count: obs / secs, obs: obs}
	if rates == nil && len(dst) == 2 {
		other.top, other.over = bounds[len(bounds)-2], (obs-dst[0])/secs
	}
	if r.bounds == nil {
		*r = other // rates is this call's own: merge would copy it
		return
	}
	r.merge(&other)
}

// merge adds another histogram's bucket rates. Layouts that differ merge on
// the bounds they share: a cumulative count at a shared bound is exact.
func (r *histRate) merge(o *histRate) {
	if o.bounds == nil {
		return
	}
	if r.bounds == nil {
		r.bounds, r.rates = o.bounds, slices.Clone(o.rates)
		r.sum, r.count, r.obs = o.sum, o.count, o.obs
		r.top, r.over = o.top, o.over
		return
	}
	if r.top == o.top {
		r.over += o.over
	} else {
		r.over = math.NaN() // above different bounds: not one share
	}
	r.sum = nanAdd(r.sum, o.sum)
	r.count += o.count
	r.obs += o.obs
	if (r.rates == nil) != (o.rates == nil) {
		r.rates = nil // one has only _count and _sum: so has the sum
	}
	if slices.Equal(r.bounds, o.bounds) {
		for k := range r.rates {
			r.rates[k] += o.rates[k]
		}
		return
	}
	var nb, nr []float64
	for i, j := 0, 0; i < len(r.bounds) && j < len(o.bounds); {
		switch {
		case r.bounds[i] < o.bounds[j]:
			i++
		case r.bounds[i] > o.bounds[j]:
			j++
		default:
			nb = append(nb, r.bounds[i])
			if r.rates != nil { // nil: only _count and _sum kept (kept), here or in o
				nr = append(nr, r.rates[i]+o.rates[j])
			}
			i++
			j++
		}
	}
	r.bounds, r.rates = nb, nr
}

func mergeLabeledRates(dst, src []labeledRate) []labeledRate {
	for _, l := range src {
		i := slices.IndexFunc(dst, func(m labeledRate) bool { return m.label == l.label })
		if i < 0 {
			dst = append(dst, l)
		} else {
			dst[i].rate += l.rate
		}
	}
	return dst
}

// merge folds another acc (an engine into an endpoint, an endpoint into the fleet).
func (x *acc) merge(o *acc) {
	x.span = max(x.span, o.span)
	x.engines += o.engines
	for c := range x.rates {
		x.rates[c] = nanAdd(x.rates[c], o.rates[c])
	}
	for i := range x.hists {
		x.hists[i].merge(&o.hists[i])
	}
	x.finish = mergeLabeledRates(x.finish, o.finish)
	x.reject = mergeLabeledRates(x.reject, o.reject)
	x.specPos = mergeLabeledRates(x.specPos, o.specPos)
	x.xfer = mergeLabeledRates(x.xfer, o.xfer)
	x.http = mergeLabeledRates(x.http, o.http)
	x.specRateG += o.specRateG
	x.specRateGN += o.specRateGN
	x.specLenG += o.specLenG
	x.specLenGN += o.specLenGN
	x.asleep += o.asleep
	x.awake += o.awake
	x.paused += o.paused
	x.unpaused += o.unpaused
	x.sleepLevel = max(x.sleepLevel, o.sleepLevel)
	x.running = nanAdd(x.running, o.running)
	x.waiting = nanAdd(x.waiting, o.waiting)
	x.swapped = nanAdd(x.swapped, o.swapped)
	x.waitCap = nanAdd(x.waitCap, o.waitCap)
	x.waitDef = nanAdd(x.waitDef, o.waitDef)
	x.kvWeighted += o.kvWeighted
	x.kvCap += o.kvCap
	x.kvPlain += o.kvPlain
	x.kvPlainN += o.kvPlainN
	x.kvKnownN += o.kvKnownN
	x.kvMax = NaNMax(x.kvMax, o.kvMax)
	x.cpuKV = NaNMax(x.cpuKV, o.cpuKV)
	x.prefixGauge += o.prefixGauge
	x.prefixGaugeN += o.prefixGaugeN
	x.capTokens += o.capTokens
	x.blocks += o.blocks
	switch {
	case o.blockSize == 0:
	case x.blockSize == 0:
		x.blockSize = o.blockSize
	case x.blockSize != o.blockSize:
		x.blockSize = math.NaN()
	}
	x.gpuMemUtil = NaNMax(x.gpuMemUtil, o.gpuMemUtil)
	x.prefixYes += o.prefixYes
	x.prefixNo += o.prefixNo
}

// stats derives the displayed numbers.
func (x *acc) stats() Stats {
	s := Stats{Span: x.span, Engines: x.engines}
	s.TTFT = x.hists[tTTFT].quantiles()
	s.ITL = x.hists[tITL].quantiles()
	s.TPOT = x.hists[tTPOT].quantiles()
	s.E2E = x.hists[tE2E].quantiles()
	s.Queue = x.hists[tQueue].quantiles()
	s.Prefill = x.hists[tPrefill].quantiles()
	s.Decode = x.hists[tDecode].quantiles()

	s.KVUsage = x.kvUsage()
	s.KVUsageMax = x.kvMax
	s.KVCapacityTokens = orNaN(x.capTokens)
	s.NumGPUBlocks = orNaN(x.blocks)
	s.BlockSize = x.blockSize
	if s.BlockSize == 0 {
		s.BlockSize = math.NaN()
	}
	s.GPUMemUtil = x.gpuMemUtil
	switch {
	case x.prefixYes > 0:
		s.PrefixCaching = sources.TriYes
	case x.prefixNo > 0:
		s.PrefixCaching = sources.TriNo
	}
	s.PrefixQueryRate = x.rates[sources.CPrefixQueries]
	s.PrefixHitRatio = x.prefixHitRatio()
	s.PreemptionsRate = x.rates[sources.CPreemptions]
	s.Swapped = x.swapped
	s.CPUKVUsage = x.cpuKV
	s.Running, s.Waiting = x.running, x.waiting
	s.WaitingCapacity, s.WaitingDeferred = x.waitCap, x.waitDef
	s.PromptTokRate = x.rates[sources.CPromptTokens]
	s.GenTokRate = x.rates[sources.CGenTokens]
	s.PromptCachedRate = x.rates[sources.CPromptCached]
	s.SpecDraftRate, s.SpecDraftTokRate, s.SpecAcceptedRate = x.rates[sources.CSpecDrafts], x.rates[sources.CSpecDraftTokens], x.rates[sources.CSpecAccepted]
	x.specStats(&s)
	x.xferStats(&s)

	s.ReqRate, s.AbortShare, s.ErrorShare = x.requestRates()
	x.sortLabeled()
	s.RejectRate = math.NaN()
	if len(x.reject) > 0 {
		s.RejectRate = 0
		for _, r := range x.reject {
			s.RejectRate += r.rate
			s.Rejects = append(s.Rejects, FinishShare{Reason: r.label, PerSec: r.rate})
		}
	}
	x.httpStats(&s)
	switch {
	case x.asleep > 0:
		s.Sleep = SleepAsleep
	case x.awake > 0:
		s.Sleep = SleepAwake
	}
	s.SleepLevel = x.sleepLevel
	switch {
	case x.paused > 0:
		s.Paused = sources.TriYes
	case x.unpaused > 0:
		s.Paused = sources.TriNo
	}
	if len(x.finish) > 0 {
		s.Finish = shares(x.finish, s.ReqRate)
	}
	s.AvgPromptLen = x.hists[tPromptLen].mean()
	s.PromptLenTop, s.PromptOverTop = math.NaN(), math.NaN()
	if p := &x.hists[tPromptLen]; p.top > 0 {
		s.PromptLenTop = p.top
		if p.count > 0 {
			s.PromptOverTop = p.over / p.count
		}
	}
	s.AvgGenLen = x.hists[tGenLen].mean()
	s.MeanIterTokens = x.hists[tIter].mean()
	s.IterTokens = x.hists[tIter].quantiles()
	byToken := x.hists[tIter].weighted()
	s.IterTokensByToken = byToken.quantiles()
	return s
}

// sparkStats is stats for what a sparkline point draws (sparkPoint) and
// nothing else: the point is taken at every scrape of every endpoint, and
// the other quantiles, the finish list and the size distributions cost
// most of a full stats there. Fields sparkPoint does not read are zero.
func (x *acc) sparkStats() Stats {
	var s Stats
	s.TTFT, s.ITL = x.hists[tTTFT].p95(), x.hists[tITL].p95()
	s.E2E, s.Queue = x.hists[tE2E].p95(), x.hists[tQueue].p95()
	s.KVUsage = x.kvUsage()
	s.PrefixHitRatio = x.prefixHitRatio()
	s.PreemptionsRate = x.rates[sources.CPreemptions]
	s.Running, s.Waiting, s.Swapped = x.running, x.waiting, x.swapped
	s.PromptTokRate = x.rates[sources.CPromptTokens]
	s.GenTokRate = x.rates[sources.CGenTokens]
	s.ReqRate, s.AbortShare, _ = x.requestRates()
	s.SpecDraftRate, s.SpecDraftTokRate, s.SpecAcceptedRate = x.rates[sources.CSpecDrafts], x.rates[sources.CSpecDraftTokens], x.rates[sources.CSpecAccepted]
	x.specStats(&s)
	x.xferStats(&s)
	x.sortLabeled()
	return s
}

// kvUsage is KV usage weighted by capacity. Engines whose capacity is
// unknown count with the mean capacity of the others (or equally when none
// is known).
func (x *acc) kvUsage() float64 {
	switch {
	case x.kvKnownN > 0 && x.kvPlainN == 0:
		return x.kvWeighted / x.kvCap
	case x.kvKnownN > 0:
		mean := x.kvCap / float64(x.kvKnownN)
		return (x.kvWeighted + x.kvPlain*mean) / (x.kvCap + mean*float64(x.kvPlainN))
	case x.kvPlainN > 0:
		return x.kvPlain / float64(x.kvPlainN)
	}
	return math.NaN()
}

func (x *acc) prefixHitRatio() float64 {
	q, h := x.rates[sources.CPrefixQueries], x.rates[sources.CPrefixHits]
	switch {
	case q > 0 && !math.IsNaN(h):
		return h / q
	case x.prefixGaugeN > 0:
		return x.prefixGauge / x.prefixGaugeN
	}
	return math.NaN()
}

// requestRates is the requests finished per second and the aborted and
// failed shares of them (NaN unknown: no error series before 0.14), summed
// in the acc's current order (before sortLabeled, as stats always did).
func (x *acc) requestRates() (reqRate, abortShare, errorShare float64) {
	reqRate, abortShare, errorShare = math.NaN(), math.NaN(), math.NaN()
	if len(x.finish) == 0 {
		if e2e := x.hists[tE2E]; e2e.bounds != nil {
			reqRate = e2e.count
		}
		return reqRate, abortShare, errorShare
	}
	total, abort := 0.0, 0.0
	for _, f := range x.finish {
		total += f.rate
		if f.label == sources.FinishAbort {
			abort = f.rate
		}
	}
	if total > 0 {
		abortShare = abort / total
		for _, f := range x.finish {
			if f.label == sources.FinishError {
				errorShare = f.rate / total
			}
		}
	}
	return total, abortShare, errorShare
}

// cutShare is the share of finished requests a limit ended (max_tokens,
// the repetition check) rather than the model's own stop; NaN without
// finish reasons.
func (x *acc) cutShare() float64 {
	total, cut := 0.0, 0.0
	for _, f := range x.finish {
		total += f.rate
		if f.label == sources.FinishLength || f.label == sources.FinishRepetition {
			cut += f.rate
		}
	}
	if total <= 0 {
		return math.NaN()
	}
	return cut / total
}

// addStatus folds an endpoint's API-server responses over the window
// ending at t (h nil: it serves none).
func (x *acc) addStatus(h *statusHistory, t time.Time, w time.Duration) {
	if h == nil {
		return
	}
	if a, b, ok := h.window(t, w); ok {
		secs := time.Duration(h.at(b).ns - h.at(a).ns).Seconds()
		x.http = h.status.addRates(x.http, &h.frameRing, a, b, secs)
	}
}

// httpStats reads the API server's responses: all of them per second, by
// status, and the share answered 4xx (refused before an engine saw them).
// NaN where no endpoint counts them over the window.
func (x *acc) httpStats(s *Stats) {
	s.HTTPRate, s.HTTP4xxShare, s.HTTPStatus = math.NaN(), math.NaN(), nil
	if len(x.http) == 0 {
		return
	}
	total, bad := 0.0, 0.0
	for _, r := range x.http {
		total += r.rate
		if strings.HasPrefix(r.label, "4") {
			bad += r.rate
		}
	}
	s.HTTPRate = total
	if total > 0 {
		s.HTTP4xxShare = bad / total
	}
	s.HTTPStatus = shares(x.http, total)
	slices.SortStableFunc(s.HTTPStatus, func(a, b FinishShare) int { return cmpRate(b.PerSec, a.PerSec) })
}

func cmpRate(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// xferStats reads the P/D and offload rates (NaN: not exposed).
func (x *acc) xferStats(s *Stats) {
	s.KVXferFailRate, s.KVExpiredRate, s.KVOffloadRate = math.NaN(), math.NaN(), math.NaN()
	for _, r := range x.xfer {
		switch r.label {
		case xferLabels[0]:
			s.KVXferFailRate = r.rate
		case xferLabels[1]:
			s.KVExpiredRate = r.rate
		case xferLabels[2]:
			s.KVOffloadRate = r.rate
		}
	}
}

// specStats derives speculative decoding's numbers: from the counters
// (vLLM V1) over the window, else the engines' gauges (SGLang, V0). The
// steps a draft is made in come from the tokens-per-step histogram.
func (x *acc) specStats(s *Stats) {
	s.SpecAcceptRate, s.SpecAcceptLen, s.SpecDraftsPerStep = math.NaN(), math.NaN(), math.NaN()
	if s.SpecDraftTokRate > 0 && !math.IsNaN(s.SpecAcceptedRate) {
		s.SpecAcceptRate = s.SpecAcceptedRate / s.SpecDraftTokRate
	} else if x.specRateGN > 0 {
		s.SpecAcceptRate = x.specRateG / float64(x.specRateGN)
	}
	if s.SpecDraftRate > 0 && !math.IsNaN(s.SpecAcceptedRate) {
		// vLLM's "mean acceptance length": the bonus token plus those accepted.
		s.SpecAcceptLen = 1 + s.SpecAcceptedRate/s.SpecDraftRate
	} else if x.specLenGN > 0 {
		s.SpecAcceptLen = x.specLenG / float64(x.specLenGN)
	}
	if it := &x.hists[tIter]; s.SpecDraftRate >= 0 && it.bounds != nil && it.count > 0 {
		s.SpecDraftsPerStep = s.SpecDraftRate / it.count // steps/s: the histogram's _count rate
	}
	if len(x.specPos) > 0 && s.SpecDraftRate > 0 {
		pos := slices.Clone(x.specPos)
		slices.SortFunc(pos, func(a, b labeledRate) int { return cmpPosition(a.label, b.label) })
		for _, p := range pos {
			s.SpecPosAccept = append(s.SpecPosAccept, p.rate/s.SpecDraftRate)
		}
	}
}

// cmpPosition orders draft positions numerically ("2" before "10").
func cmpPosition(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// sortLabeled orders the rejections by rate and the finish reasons by
// name, as stats reports them; an acc merged into a larger one later adds
// its rates up in this order.
func (x *acc) sortLabeled() {
	sort.Slice(x.reject, func(i, j int) bool { return x.reject[i].rate > x.reject[j].rate })
	sort.Slice(x.finish, func(i, j int) bool { return x.finish[i].label < x.finish[j].label })
	sort.Slice(x.http, func(i, j int) bool { return x.http[i].label < x.http[j].label })
}

func orNaN(v float64) float64 {
	if v == 0 {
		return math.NaN()
	}
	return v
}

func (r *histRate) quantiles() Quantiles {
	nan := math.NaN()
	q := Quantiles{P50: nan, P90: nan, P95: nan, P99: nan, Mean: nan, Count: nan, Lowest: nan, Highest: nan}
	if n := len(r.bounds); n >= 2 {
		q.Lowest, q.Highest = r.bounds[0], r.bounds[n-2]
		q.Bounds = r.bounds[: n-1 : n-1]
	}
	if r.bounds == nil || !(r.count > 0) {
		if r.bounds != nil {
			q.Count = r.obs
		}
		return q
	}
	q.P50 = bucketQuantile(0.50, r.bounds, r.rates)
	q.P90 = bucketQuantile(0.90, r.bounds, r.rates)
	q.P95 = bucketQuantile(0.95, r.bounds, r.rates)
	q.P99 = bucketQuantile(0.99, r.bounds, r.rates)
	q.Mean, q.Count = r.mean(), r.obs
	return q
}

// weighted returns the distribution of a size histogram (tokens per step)
// weighted by size: each bucket's rate is multiplied by the bucket's typical
// value (its midpoint; the first bucket's upper half; the +Inf bucket's
// lower bound), then scaled so the total is the exact rate of _sum.
func (r *histRate) weighted() histRate {
	n := len(r.bounds)
	if n < 2 || !(r.count > 0) || !(r.sum > 0) {
		return histRate{}
	}
	w := make([]float64, n)
	total, prev, prevBound := 0.0, 0.0, 0.0
	for i, b := range r.bounds {
		c := r.rates[i] - prev
		prev = r.rates[i]
		mid := (prevBound + b) / 2
		if math.IsInf(b, 1) {
			mid = prevBound
		}
		total += c * mid
		w[i] = total
		prevBound = b
	}
	if total <= 0 {
		return histRate{}
	}
	scale := r.sum / total
	for i := range w {
		w[i] *= scale
	}
	return histRate{bounds: r.bounds, rates: w, sum: math.NaN(), count: r.sum, obs: r.obs}
}

// p95 is quantiles' P95 and Lowest only (what a sparkline draws).
func (r *histRate) p95() Quantiles {
	nan := math.NaN()
	q := Quantiles{P95: nan, Lowest: nan}
	if n := len(r.bounds); n >= 2 {
		q.Lowest = r.bounds[0]
	}
	if r.bounds != nil && r.count > 0 {
		q.P95 = bucketQuantile(0.95, r.bounds, r.rates)
	}
	return q
}

func (r *histRate) mean() float64 {
	if r.bounds == nil || !(r.count > 0) {
		return math.NaN()
	}
	return r.sum / r.count
}

// shares is each label's rate and its share of total (NaN where total is
// not positive): the finish reasons' and the HTTP statuses' lists alike.
func shares(rates []labeledRate, total float64) []FinishShare {
	out := make([]FinishShare, len(rates))
	for i, r := range rates {
		share := math.NaN()
		if total > 0 {
			share = r.rate / total
		}
		out[i] = FinishShare{Reason: r.label, PerSec: r.rate, Share: share}
	}
	return out
}
