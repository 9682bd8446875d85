package diagnose

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// What changed, and when: every scrape adds one observation per workload
// and capacity signal (the increase since the previous scrape, not a
// window's smoothing, so a step is seen at the scrape it happens); each
// signal keeps a slow baseline and a two-sided CUSUM against it. The
// CUSUM's last departure from zero is the onset: the scrape the change
// began, which a threshold on a moving average would place a window late.
// A change is reported once it has held (bursts of traffic come and go)
// and moved the level by a clear factor; it ends when the level comes
// back, or becomes the baseline after shiftAccept.

// ShiftKind says what a change is a question for.
type ShiftKind uint8

const (
	// ShiftWorkload is the traffic: what clients send (a question for
	// whoever owns the traffic, not a fault).
	ShiftWorkload ShiftKind = iota
	// ShiftCapacity is what the server can do with it (a fault: a slower
	// GPU, a restart, a smaller cache).
	ShiftCapacity
	// ShiftSymptom is what users feel (latency): moved by one of the others.
	ShiftSymptom
)

func (k ShiftKind) String() string { return [...]string{"workload", "capacity", "symptom"}[k] }

// Signal names one watched signal.
type Signal uint8

const (
	SigArrivals  Signal = iota // requests arriving per second (finished + the change in running and waiting)
	SigPromptTok               // prompt tokens prefilled per second
	SigPromptLen               // mean prompt length of finished requests, tokens
	SigGenLen                  // mean output length of finished requests, tokens
	SigPrefixHit               // prefix-cache hit ratio
	SigAbort                   // share of finished requests aborted
	SigCut                     // share of finished requests a limit ended (max_tokens, the repetition check), not the model's stop
	SigDecode                  // generated tokens/s per running request: the speed a request gets
	SigGPUClock                // the slowest SM clock of the endpoint's own busy GPUs, MHz
	SigTTFT                    // TTFT p95 of the requests of one scrape, s
	SigITL                     // inter-token p95, s
	NumSignals
)

// signalInfo is a signal's meaning and how a change in it is judged.
type signalInfo struct {
	Name string
	Kind ShiftKind
	Unit Unit
	// ratio: the signal is positive and changes by factors (judged in
	// log space); otherwise it is a share, judged by its difference.
	ratio bool
	// effect is the least change reported: a factor (ratio) or a
	// difference (share).
	effect float64
	// hold is how long a change must last before it is reported.
	hold time.Duration
}

var signals = [NumSignals]signalInfo{
	// Traffic comes in bursts (a few times the rate for tens of seconds):
	// arrivals need a larger, longer change than a length does.
	SigArrivals:  {"arrival rate", ShiftWorkload, UnitPerSec, true, 1.8, 45 * time.Second},
	SigPromptTok: {"prompt tokens/s", ShiftWorkload, UnitPerSec, true, 1.8, 45 * time.Second},
	SigPromptLen: {"prompt mean", ShiftWorkload, UnitTokens, true, 1.6, 20 * time.Second},
	SigGenLen:    {"output mean", ShiftWorkload, UnitTokens, true, 1.6, 20 * time.Second},
	SigPrefixHit: {"prefix hit rate", ShiftWorkload, UnitRatio, false, 0.2, 30 * time.Second},
	SigAbort:     {"abort share", ShiftWorkload, UnitRatio, false, 0.15, 30 * time.Second},
	// Answers that run on to max_tokens: the clients' limit moved, or the
	// model stopped ending its answers (told apart in detect).
	SigCut: {"answers cut off", ShiftWorkload, UnitRatio, false, 0.15, 30 * time.Second},
	// A request's decode speed falls with a larger batch as much as with
	// a slower GPU: what users feel, not a capacity measure.
	SigDecode: {"decode speed per request", ShiftSymptom, UnitPerSec, true, 2, 30 * time.Second},
	// A busy GPU's clock is the engine's capacity: it falls when the GPU
	// throttles, not when the traffic changes.
	SigGPUClock: {"GPU SM clock", ShiftCapacity, UnitMHz, true, 1.25, 20 * time.Second},
	// Latency moves with every burst: only a change users notice.
	SigTTFT: {"TTFT p95", ShiftSymptom, UnitSeconds, true, 3, 20 * time.Second},
	SigITL:  {"inter-token p95", ShiftSymptom, UnitSeconds, true, 2, 30 * time.Second},
}

// Shift is one change of a signal against its baseline.
type Shift struct {
	Signal   Signal
	Name     string
	Kind     ShiftKind
	Unit     Unit
	Onset    time.Time // when the change began, dated on the recent observations (see onset), never after Detected
	Detected time.Time // when it had held long enough to report
	Before   float64   // the baseline level
	After    float64   // the level since the onset (updated while it lasts)
	Ended    time.Time // zero while it lasts: the level came back, or became the baseline
	Accepted bool      // ended by becoming the baseline (the new normal)
	// settled: a rise of traffic that came back was read up still
	// shiftSettle after its end, against ref, the level between bursts
	// before it then (log space): read again over twice as long (see
	// dropBursts).
	settled bool
	ref     float64
	// between is the arrivals' blocks' baseline when a rise of traffic
	// opened, the level between bursts before it, per second (0: none
	// yet; see dropBursts).
	between float64
}

// Factor is After over Before (ratio signals), NaN when not meaningful.
func (s Shift) Factor() float64 {
	if !signals[s.Signal].ratio || !(s.Before > 0) {
		return math.NaN()
	}
	return s.After / s.Before
}

const (
	// shiftTau is the baseline's time constant: slow against a change,
	// quick enough that an hour-old normal is not the reference.
	shiftTau = 3 * time.Minute
	// shiftWarm is the observations a baseline needs before it judges.
	shiftWarm = 30
	// shiftK and shiftH: the CUSUM's slack and decision threshold, in
	// baseline deviations.
	shiftK, shiftH = 1.0, 6.0
	// shiftAccept: a change lasting this long is the new baseline.
	shiftAccept = 10 * time.Minute
	// shiftFastTau is the recent level's time constant.
	shiftFastTau = 15 * time.Second
	// shiftKeep bounds the shifts an endpoint remembers, shiftRetain
	// how long.
	shiftKeep   = 48
	shiftRetain = time.Hour
	// shiftFloor is the least deviation a baseline assumes (log space for
	// ratio signals, a share otherwise): a very steady signal must not
	// call its first wobble a change.
	shiftFloorLog, shiftFloorShare = 0.08, 0.02
)

// cusum follows one signal.
type cusum struct {
	n        int
	mean, m2 float64 // the baseline: EWMA of the level and of its squared deviation
	// first is the Unix ns of the first observation: how long the
	// baseline has been learned.
	first   int64
	hi, lo  float64 // the upward and downward sums
	hiStart int64   // Unix ns of the scrape each sum last left zero
	loStart int64
	// post: the level since the onset of the change being followed.
	postSum float64
	postN   int
	// postK and postDen, for a share of counts (den) or a mean of
	// finished requests (lagged), are the counted part (the sum) and the
	// count since the onset (see post and drainedOnly).
	postK, postDen float64
	fast           float64 // the recent level (shiftFastTau): whether an open change is over
	active         int     // index+1 in the endpoint's shifts of the open change, 0 none
	// recent are the newest observations as read (not in log space;
	// NaN: none that scrape), in the ring the state's times index: the
	// onset is dated on them.
	recent [shiftRecent]float32
	// den, for a share of counts (prefix hits of the queried tokens,
	// aborts of the finished requests), is each recent observation's
	// denominator, the count it is a share of (NaN: not known): a second
	// of three queried tokens is not as sure of its share as one of
	// thousands. nil for other signals.
	den []float32
	// blk, for arrivals, is the same CUSUM over blocks of scrapes (see
	// countBlocks); nil for other signals.
	blk *countBlocks
}

// shiftRecent is the scrapes an onset is dated over: the longest hold
// and the detection's delay after it (a ×2.2 rate among ×2.5 bursts is
// confirmed up to a minute late at 1 s scrapes), with the level before
// the change still in view.
const shiftRecent = 128

// shiftState is an endpoint's change detection.
type shiftState struct {
	sig   [NumSignals]cusum
	times [shiftRecent]int64 // Unix ns of the scrapes in the rings
	// lag is the e2e latency of the requests finished in each scrape of
	// the rings, in two parts (see splitLatency): how long before their
	// finish the requests behind that scrape's length means arrived.
	lag      [shiftRecent]latencySplit
	pos      int // the newest scrape's slot
	seen     int // scrapes observed, up to shiftRecent
	last     time.Time
	prevInFl float64 // running + waiting at the previous scrape
	shifts   []Shift // oldest first
	bursts   []int64 // Unix ns of the detection of the bursts dropped, newest last
	// drainUntil is when the finished requests' means are a level again
	// after a burst that queued (see draining).
	drainUntil time.Time
}

func newShiftState() shiftState {
	s := shiftState{prevInFl: math.NaN()}
	for _, sig := range [...]Signal{SigPrefixHit, SigAbort, SigCut} {
		s.sig[sig].den = make([]float32, shiftRecent)
	}
	// A hold's worth of blocks of 2 s, the shortest that judge (a
	// scrape's worth, which do not, are learned sooner when it is full).
	s.sig[SigArrivals].blk = &countBlocks{pending: make([]pendingBlock, 0, 24)}
	return s
}

// observeShifts takes one scrape's observations from the endpoint's
// history: the increase between its two newest frames, over every
// sub-series.
func (e *Engine) observeShifts(ep *endpoint, t time.Time) {
	x := newAcc()
	for _, sub := range ep.refs {
		h := ep.subs[sub.key]
		if h == nil || h.n < 2 {
			continue
		}
		x.addSub(h, h.n-2, h.n-1, sub.cache, shiftHists)
	}
	nan := math.NaN()
	var obs, den [NumSignals]float64
	for i := range obs {
		obs[i], den[i] = nan, nan
	}
	obs[SigGPUClock] = e.busyClock(ep)
	if x.engines == 0 || x.span <= 0 {
		ep.shift.prevInFl = nan
		ep.shift.observe(t, &obs, &den, 0)
		return
	}
	req, abort, _ := x.requestRates()
	if len(x.finish) == 0 {
		// Without finish reasons requestRates counts the e2e histogram,
		// read here only for the lengths' lag: a server without them
		// (SGLang) keeps no arrival signal, as before (read so, a
		// thrashing SGLang replica's arrivals "fell ÷3.5", dated before
		// its traffic changed: not checked against its gauges yet).
		req = math.NaN()
	}
	inFl := nanAdd(x.running, x.waiting)
	if !math.IsNaN(req) && !math.IsNaN(inFl) && !math.IsNaN(ep.shift.prevInFl) {
		// Every request that arrived either finished or is still held.
		obs[SigArrivals] = math.Max(0, req+(inFl-ep.shift.prevInFl)/x.span.Seconds())
	}
	ep.shift.prevInFl = inFl
	obs[SigPromptTok] = x.rates[sources.CPromptTokens]
	obs[SigPromptLen] = x.hists[tPromptLen].mean()
	obs[SigGenLen] = x.hists[tGenLen].mean()
	den[SigPromptLen] = x.hists[tPromptLen].obs // requests finished
	den[SigGenLen] = x.hists[tGenLen].obs
	if q := x.rates[sources.CPrefixQueries]; q > 0 {
		obs[SigPrefixHit] = x.prefixHitRatio()
		if !math.IsNaN(x.rates[sources.CPrefixHits]) {
			den[SigPrefixHit] = q * x.span.Seconds() // tokens queried
		}
	}
	obs[SigAbort] = abort
	if !math.IsNaN(abort) {
		den[SigAbort] = req * x.span.Seconds() // requests finished
	}
	if cut := x.cutShare(); !math.IsNaN(cut) {
		obs[SigCut], den[SigCut] = cut, req*x.span.Seconds()
	}
	if x.running >= 1 {
		obs[SigDecode] = x.rates[sources.CGenTokens] / x.running
	}
	obs[SigTTFT] = x.hists[tTTFT].p95().P95
	obs[SigITL] = x.hists[tITL].p95().P95
	ep.shift.observe(t, &obs, &den, splitLatency(&x.hists[tE2E], x.hists[tTTFT].mean(), x.span.Seconds()))
}

// busyClock is the slowest SM clock of the GPUs attributed to the
// endpoint that are busy (an idle GPU lowers its clocks by design) and
// not merely at their power limit, NaN when none.
func (e *Engine) busyClock(ep *endpoint) float64 {
	c := math.NaN()
	for _, gi := range ep.gpu.joined.GPUs {
		if gi < 0 || gi >= len(e.gpu.snap.GPUs) {
			continue
		}
		g := &e.gpu.snap.GPUs[gi]
		// A busy GPU at its power limit trades clock for watts as the
		// load asks: the clock says the load, not what the GPU can do.
		capOnly := g.ClockEventBits&sources.ClockSWPowerCap != 0 && g.ClockEventBits&(sources.ClockThrottle&^sources.ClockSWPowerCap) == 0
		// A reading between kernels is at idle clocks whatever the
		// utilization averaged over the last second says.
		idle := g.ClockEventBits&sources.ClockIdle != 0
		if g.UtilGPU >= busyUtil && g.SMClockMHz > 0 && !capOnly && !idle {
			c = NaNMin(c, g.SMClockMHz)
		}
	}
	return c
}

// busyUtil is the utilization, percent, above which a GPU's clock says
// what it can do.
const busyUtil = 20

// shiftHists are the histograms a scrape's observations read.
const shiftHists = 1<<tE2E | 1<<tTTFT | 1<<tITL | 1<<tPromptLen | 1<<tGenLen

// observe adds one scrape's observations (NaN: none this scrape), the
// counts the shares among them are of (NaN: not known) and the e2e
// latency of its finished requests (none: none finished).
func (s *shiftState) observe(t time.Time, obs, den *[NumSignals]float64, lag latencySplit) {
	var dt time.Duration
	if !s.last.IsZero() {
		dt = t.Sub(s.last)
	}
	s.last = t
	if dt <= 0 {
		return
	}
	alpha := 1 - math.Exp(-dt.Seconds()/shiftTau.Seconds())
	fast := 1 - math.Exp(-dt.Seconds()/shiftFastTau.Seconds())
	s.pos = (s.pos + 1) % shiftRecent
	s.seen = min(s.seen+1, shiftRecent)
	s.times[s.pos] = t.UnixNano()
	s.lag[s.pos] = lag
	n := len(s.shifts)
	for i := range s.sig {
		if d := s.sig[i].den; d != nil {
			d[s.pos] = float32(den[i])
		}
		s.step(Signal(i), t, obs[i], den[i], alpha, fast)
		if Signal(i) == SigArrivals {
			s.markDrain(t) // before the lengths are judged
		}
	}
	if len(s.shifts) > n {
		s.comoving(t)
	}
	s.dropBursts(t, dt)
}

// comoving opens, once one change is found, every other signal whose sum
// is past the threshold with a clear change of level, without waiting for
// its own hold: anomalies that start together are one change, and what
// moved first is only told among them (a prompt-length change is seen in
// prompt tokens/s at once, in finished requests' means seconds later).
// A share of counts, or a mean of finished requests, has held half its
// own hold: one abort among a second's two finished requests was an
// abort share of 0.5, opened with the TTFT a batch job's burst lifted
// (batch-job-bursts at 1 s scrapes); so were the output means of the
// burst's first few requests to finish, its short ones, while the rest
// waited (seed 56: 3, 72 and 38 tokens from one, one and two requests,
// then 77 from 14, on a baseline of 204, the burst's arrivals' recent
// level x2.3, short of draining's gate, the means back within 10 s;
// seeds 36, 42 and 59 as well).
// Bursts and drains are judged as on the signal's own (burstsOnly,
// draining); a burst of traffic opened so is reported while it lasts and
// forgotten after (dropBursts), as one found on its own. Nor is a signal
// opened whose baseline was learned for less than its own hold before the
// change's start: at its hold it would be taken as the baseline (rebase).
// A replica opened inside a batch job's burst of 34 s read its end as a
// fall of arrivals from 22.5 to 3.5/s, opened 22 s after with the output
// mean and kept (batch-job-bursts at 1 s scrapes, seed 53).
func (s *shiftState) comoving(t time.Time) {
	for i := range s.sig {
		c := &s.sig[i]
		info := &signals[i]
		if c.active > 0 || c.n <= shiftWarm || c.postN == 0 || math.Max(c.hi, c.lo) < shiftH {
			continue
		}
		post := c.post()
		if !clearChange(info, c.mean, post, 1) || s.burstsOnly(Signal(i), c, c.start(), post) || s.draining(Signal(i)) || s.drainedOnly(Signal(i), c) || s.fewEvents(Signal(i), c) ||
			(c.den != nil || lagged(Signal(i))) && t.Sub(time.Unix(0, c.start())) < info.hold/2 || c.rebase(c.start(), t, post) ||
			c.start()-c.first < info.hold.Nanoseconds() {
			continue
		}
		start := c.start()
		s.open(Shift{Signal: Signal(i), Name: info.Name, Kind: info.Kind, Unit: info.Unit,
			Onset: s.onset(Signal(i), c, start, post), Detected: t, Before: level(info, c.mean), After: level(info, post)})
		c.active = len(s.shifts)
	}
}

func (s *shiftState) step(sig Signal, t time.Time, v, n float64, alpha, fast float64) {
	s.stepScrape(sig, t, v, n, alpha, fast)
	if b := s.sig[sig].blk; b != nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
		s.stepBlock(sig, b, t, v)
	}
}

// stepScrape follows a signal scrape by scrape; n is the count behind
// the observation (a share's denominator, the requests behind a mean;
// NaN: not known).
func (s *shiftState) stepScrape(sig Signal, t time.Time, v, n float64, alpha, fast float64) {
	info := &signals[sig]
	c := &s.sig[sig]
	c.recent[s.pos] = float32(math.NaN())
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	// A count of none is an observation for dating (a second without
	// arrivals), though not for the baseline of a ratio signal.
	c.recent[s.pos] = float32(v)
	x := v
	if info.ratio {
		if v <= 0 {
			return
		}
		x = math.Log(v)
	}
	if c.n == 0 {
		c.mean, c.fast, c.first = x, x, t.UnixNano()
	}
	c.n++
	c.fast += fast * (x - c.fast)
	floor := shiftFloorShare
	if info.ratio {
		floor = shiftFloorLog
	}
	sd := math.Max(math.Sqrt(c.m2), floor)
	z := (x - c.mean) / sd
	if c.n <= shiftWarm {
		a := max(alpha, 1/float64(c.n))
		c.learn(x, a, a)
		return
	}
	ns := t.UnixNano()
	if c.hi == 0 {
		c.hiStart = ns
	}
	if c.lo == 0 {
		c.loStart = ns
	}
	c.hi = math.Max(0, c.hi+z-shiftK)
	c.lo = math.Max(0, c.lo-z-shiftK)
	if c.hi == 0 && c.lo == 0 && c.active == 0 {
		c.postSum, c.postN, c.postK, c.postDen = 0, 0, 0, 0
	} else {
		c.postSum += x
		c.postN++
		if n > 0 && (c.den != nil || lagged(sig)) {
			c.postK += v * n
			c.postDen += n
		}
	}
	if c.active > 0 {
		s.follow(sig, c, t)
		return
	}
	// The baseline learns from what is not part of a change: a sum
	// past half the threshold is one developing.
	if math.Max(c.hi, c.lo) < shiftH/2 {
		c.learn(x, alpha, alpha)
	}
	start := c.hiStart
	if c.lo > c.hi {
		start = c.loStart
	}
	if math.Max(c.hi, c.lo) < shiftH || c.postN == 0 || t.Sub(time.Unix(0, start)) < info.hold {
		return
	}
	post := c.post()
	if !clearChange(info, c.mean, post, 1) {
		// Past the threshold but not a clear change of level (a drift,
		// a baseline learned on a start-up): start again from here.
		c.restart()
		return
	}
	if s.burstsOnly(sig, c, start, post) || s.draining(sig) || s.drainedOnly(sig, c) || s.fewEvents(sig, c) {
		return
	}
	if c.rebase(start, t, post) {
		return
	}
	s.open(Shift{Signal: sig, Name: info.Name, Kind: info.Kind, Unit: info.Unit,
		Onset: s.onset(sig, c, start, post), Detected: t, Before: level(info, c.mean), After: level(info, post)})
	c.active = len(s.shifts)
}

// countBlocks follows arrivals over blocks of scrapes, each as long as
// the baseline needs to expect shiftBlockCount arrivals (shiftBlockMax at
// most), when one scrape expects fewer: a second's count at ~3/s has a
// Poisson spread in log space (~0.6) near a ×2.2 change's own size (0.79),
// and the scrape CUSUM, its slack a deviation learned over that noise and
// the bursts, hardly gains on such a change while its baseline learns it
// (seed 3's arrivals replica of cmd/vtop's changesFleet at 1 s scrapes: a
// ×2.2 rise never found). Over a block of 30 expected arrivals the Poisson
// spread is 0.18, and the spread learned over blocks is what the traffic
// adds to it. The blocks follow the level between bursts: a batch job's
// bursts (8x for about 4 s) are a second process on top of the traffic,
// and its scrapes (with the scrape either side, which holds part of a
// burst) are left out of the blocks (see burstScrape); a block moves the
// baseline and its spread by a few Poisson deviations at most (one that
// holds what is left of a burst is no level), and the first blocks'
// baseline is their median (a start-up burst is no level either).
// Learned over the bursts, the baseline read 3.5 to 4.2/s on 3/s between
// them, its spread 0.5 to 0.66, and a x2.2 rise of the traffic between them
// (busy at 4 min under batch-job-bursts) was found on 43 of 60 seeds at
// 1 s scrapes and 36 at 5 s, most a minute or more late. The blocks only
// decide that a change holds and since which scrape; it is dated,
// measured and followed on the scrapes as any other, against the level
// between bursts before it.
type countBlocks struct {
	n        int     // blocks learned
	mean, m2 float64 // the baseline: EWMA of the log rate over blocks, of its squared deviation
	// The open block: arrivals, seconds, scrapes and the Unix ns of its
	// first scrape.
	cnt, span float64
	scrapes   int
	from      int64
	// hi is the upward sum: rises only (see stepBlock). start is the Unix
	// ns of the first scrape of the block it last left zero at.
	hi    float64
	start int64
	// post: arrivals and seconds since the sum left zero.
	postCnt, postSpan float64
	// pending are the blocks the baseline will learn a hold after they
	// closed (see settle), oldest first.
	pending []pendingBlock
	// held is the newest scrape, added to the open block once the next
	// is known (a scrape beside a burst holds part of it); prevBurst
	// says the scrape before it was a burst, burstSpan how long the
	// bursts have lasted without a break, s (see burstScrape).
	held      heldScrape
	prevBurst bool
	burstSpan float64
	// warm are the first blocks' log rates (see warmUp).
	warm [shiftBlockWarm]float64
}

// heldScrape is one scrape's arrivals and seconds, the Unix ns of it, and
// whether it was a burst.
type heldScrape struct {
	ns        int64
	cnt, span float64
	burst     bool
}

// pendingBlock is a block's log rate and learning rate, and when it
// closed.
type pendingBlock struct {
	ns      int64
	x, a, p float64
}

const (
	// shiftBlockCount is the arrivals a block's baseline expects: a log
	// count's Poisson spread of 1/√30 = 0.18.
	shiftBlockCount = 30
	// shiftBlockMax bounds a block's length: three blocks within the
	// arrivals' hold.
	shiftBlockMax = 15 * time.Second
	// shiftBlockWarm is the blocks a baseline learns before it judges.
	shiftBlockWarm = 8
)

// stepBlock adds one scrape's arrivals (v per second since the previous
// scrape) to the open block, and judges the block when it is full. It
// opens a change only while none is open and blocks are longer than a
// scrape: at a scrape's worth of expected arrivals the scrape CUSUM alone
// judges, as before. Rises only: a fall found so could not be dated
// (traffic-drop's ÷2.2 on 3/s at 1 s scrapes: 14 more of 30 draws found,
// 7 of them dated 3 to 37 s from the change, either way), since a burst
// at the fallen level (×2.5) is the old level again and the counts do
// not say when the traffic fell; the scrape CUSUM finds the clear falls,
// dated within two scrapes. A scrape joins the open block once the next
// is known: a burst's edge scrape holds part of it.
func (s *shiftState) stepBlock(sig Signal, b *countBlocks, t time.Time, v float64) {
	c := &s.sig[sig]
	if s.seen < 2 {
		return
	}
	dt := time.Duration(s.times[s.pos] - s.times[(s.pos-1+shiftRecent)%shiftRecent]).Seconds()
	cnt := math.Max(v, 0) * dt
	burst := b.burstScrape(cnt, dt)
	h, prev := b.held, b.prevBurst
	b.held, b.prevBurst = heldScrape{t.UnixNano(), cnt, dt, burst}, h.burst
	if h.span == 0 || h.burst || burst || prev {
		return
	}
	if b.scrapes == 0 {
		b.from = h.ns
	}
	b.cnt += h.cnt
	b.span += h.span
	b.scrapes++
	expect := b.cnt // before a baseline: the count seen
	if b.n > 0 {
		expect = math.Exp(b.mean) * b.span
	}
	if expect < shiftBlockCount && b.span < shiftBlockMax.Seconds() {
		return
	}
	cnt, span, scrapes, from := b.cnt, b.span, b.scrapes, b.from
	b.cnt, b.span, b.scrapes = 0, 0, 0
	// A block without arrivals is counted as half of one: a level below
	// any the baseline expects, not -Inf.
	x := math.Log(math.Max(cnt, 0.5) / span)
	alpha := 1 - math.Exp(-span/shiftTau.Seconds())
	b.n++
	if b.n <= shiftBlockWarm {
		b.warmUp(x)
		return
	}
	b.settle(t, c.active > 0)
	pois := 1 / math.Sqrt(math.Exp(b.mean)*span)
	if c.active > 0 || scrapes == 1 {
		// A change open, or a scrape's worth of arrivals: the scrape
		// CUSUM judges alone (and the baseline does not learn a change).
		b.hi, b.postCnt, b.postSpan = 0, 0, 0
		if c.active == 0 {
			b.keep(t, x, alpha, pois)
		}
		return
	}
	// The spread learned over blocks, never below their Poisson spread.
	sd := math.Max(math.Max(math.Sqrt(b.m2), pois), shiftFloorLog)
	z := (x - b.mean) / sd
	if b.hi == 0 {
		b.start = from
	}
	b.hi = math.Max(0, b.hi+z-shiftK)
	if b.hi == 0 {
		b.postCnt, b.postSpan = 0, 0
	} else {
		b.postCnt += cnt
		b.postSpan += span
	}
	if b.hi < shiftH/2 {
		b.keep(t, x, alpha, pois)
	}
	start := b.start
	info := &signals[sig]
	if b.hi < shiftH || c.n <= shiftWarm || t.Sub(time.Unix(0, start)) < info.hold {
		return
	}
	if c.hi >= shiftH {
		// The scrape CUSUM is past its threshold: it judges, once its
		// own hold has passed (the blocks are for a change it cannot
		// find). Its start is a scrape's, not a block's: a burst just
		// before the change, at the new level's rate, began the blocks'
		// sum with its block and dated the change at the burst (seed
		// 11's busy replica of TestShiftOnsets: 12 s early).
		return
	}
	if !clearChange(info, b.mean, x, 0.5) {
		// The newest block is back near the baseline: what lifted the
		// sum is over (a burst of 36 s, on a spread learned over quiet
		// blocks, held the sum past the threshold 12 s after its end:
		// seed 1's healthy replica). A change holds.
		return
	}
	post := math.Log(math.Max(b.postCnt, 0.5) / b.postSpan)
	b.hi, b.postCnt, b.postSpan = 0, 0, 0
	if !clearChange(info, b.mean, post, 1) {
		return
	}
	// Measured and followed on the scrapes, as a change the scrape
	// CUSUM found: the level since its start.
	sum, n := s.logSince(c, start)
	if n == 0 {
		return
	}
	// Against the level between bursts before it, not the scrape
	// baseline: a mean of each scrape's log count, lifted by the bursts
	// it learned (at 5 s scrapes 5/s, on 3/s between them), which the
	// level between bursts after a x2.2 rise did not clear by half the
	// least change (burstsOnly).
	scrapeMean := c.mean
	c.mean = b.mean
	if s.burstsOnly(sig, c, start, sum/float64(n)) {
		c.mean = scrapeMean
		return
	}
	c.postSum, c.postN = sum, n
	if c.rebase(start, t, sum/float64(n)) {
		b.mean, b.pending = post, b.pending[:0]
		return
	}
	s.open(Shift{Signal: sig, Name: info.Name, Kind: info.Kind, Unit: info.Unit,
		Onset: s.onset(sig, c, start, sum/float64(n)), Detected: t, Before: level(info, c.mean), After: level(info, sum/float64(n))})
	c.active = len(s.shifts)
}

// shiftBurstLevel: a scrape whose arrivals are clearly above this many
// times the blocks' baseline is a burst (see burstScrape).
const shiftBurstLevel = 3

// burstScrape says a scrape's cnt arrivals over dt seconds are a burst on
// top of the traffic, not its level: more than three Poisson deviations
// above shiftBurstLevel times the blocks' baseline, for no longer than
// the arrivals' hold.
func (b *countBlocks) burstScrape(cnt, dt float64) bool {
	if b.n == 0 {
		return false
	}
	m := shiftBurstLevel * math.Exp(b.mean) * dt
	if cnt <= m+3*math.Sqrt(m) {
		b.burstSpan = 0
		return false
	}
	b.burstSpan += dt
	return b.burstSpan <= signals[SigArrivals].hold.Seconds()
}

// keep holds a block for the baseline to learn a hold later (see
// settle).
func (b *countBlocks) keep(t time.Time, x, a, p float64) {
	if n := len(b.pending); n == cap(b.pending) && n > 0 {
		b.learn(b.pending[0].x, b.pending[0].a, b.pending[0].p)
		copy(b.pending, b.pending[1:])
		b.pending = b.pending[:n-1]
	}
	b.pending = append(b.pending, pendingBlock{t.UnixNano(), x, a, p})
}

// settle learns the blocks kept a hold ago, unless a change has opened
// or is developing since (the sum past half the threshold): the baseline
// learns what held a hold without becoming a change, not the first
// blocks of one. Learned at once, a ×2.2 rise at ~3/s amid bursts, its
// blocks 1.6 deviations of the bursts' spread above the baseline, moved
// the baseline 14 % of the way before the sum reached half the threshold,
// and the change never cleared the least change (seeds 9 and 11's
// arrivals replicas of cmd/vtop's changesFleet at 1 s scrapes: both found
// so, seed 9's dated within a scrape).
func (b *countBlocks) settle(t time.Time, open bool) {
	hold := signals[SigArrivals].hold.Nanoseconds()
	k := 0
	for k < len(b.pending) && t.UnixNano()-b.pending[k].ns >= hold {
		if !open && b.hi < shiftH/2 {
			b.learn(b.pending[k].x, b.pending[k].a, b.pending[k].p)
		}
		k++
	}
	b.pending = append(b.pending[:0], b.pending[k:]...)
}

// shiftBlockClip bounds, in a block's Poisson deviations, how far one
// block moves the blocks' baseline and its spread: a block holding a short
// burst (at 5 s scrapes, one of a second adds 24 arrivals to a scrape
// expecting 15, short of burstScrape) is no level of the traffic.
const shiftBlockClip = 3

// warmUp takes x, the n-th block's log rate, into a baseline that has not
// judged yet: the median of the blocks so far (a burst in the first
// blocks, before a baseline can tell one, lifts their mean), its spread
// left to learn (at first the Poisson one: learned over the first
// blocks' bursts, it read 0.5 in log space on a Poisson 0.18 for minutes
// after, and a x2.2 rise under a batch job's bursts was not found).
func (b *countBlocks) warmUp(x float64) {
	b.warm[b.n-1] = x
	xs := slices.Clone(b.warm[:b.n])
	slices.Sort(xs)
	b.mean = median(xs)
}

// median of sorted xs.
func median(xs []float64) float64 {
	n := len(xs)
	return (xs[(n-1)/2] + xs[n/2]) / 2
}

// learn moves the blocks' baseline toward x.
func (b *countBlocks) learn(x, a, p float64) {
	lim := shiftBlockClip * math.Max(p, shiftFloorLog)
	d := min(max(x-b.mean, -lim), lim)
	b.mean += a * d
	b.m2 = (1-a)*b.m2 + a*d*d
}

// logSince is the sum and count of a ratio signal's positive scrapes in
// the rings from from on, in log space: its scrape CUSUM's post.
func (s *shiftState) logSince(c *cusum, from int64) (float64, int) {
	var sum float64
	n := 0
	for k := range s.seen {
		i := (s.pos - k + shiftRecent) % shiftRecent
		if s.times[i] < from {
			break
		}
		if v := float64(c.recent[i]); v > 0 {
			sum += math.Log(v)
			n++
		}
	}
	return sum, n
}

// onset dates where a change began from the mechanism, not from when
// detection became confident. For arrivals and lengths, the recent
// observations are split into segments of constant level (the penalized
// likelihood's optimal partition); the change began at the first of the
// newest run of segments still changed from the baseline in the change's
// direction: by half the least change reported (the hysteresis a change
// needs to end) and a third of the way to the level since the CUSUM's
// start (not half: that level is inflated when the sum started in a
// burst). A burst of traffic before the change is a segment that came
// back, one after it a segment of the run, so neither moves the onset as
// it moves a single split. Arrivals are counts (Poisson), lengths
// Gaussian in log space. Lengths are known as requests finish: each
// scrape's means are placed at the mean arrival of the requests behind
// them (the scrape less their mean e2e latency), so a change is dated
// when the longer requests arrived. Other signals are dated by stepOnset.
// start, the CUSUM's last departure from zero, is kept when the rings do
// not reach back to the change.
func (s *shiftState) onset(sig Signal, c *cusum, start int64, post float64) time.Time {
	oldest := s.times[(s.pos-s.seen+1+shiftRecent)%shiftRecent]
	if start < oldest {
		return time.Unix(0, start)
	}
	// A change of this signal that ended within the rings bounds this
	// one: the level before it is not this change's baseline.
	from := oldest
	for i := range s.shifts {
		if sh := &s.shifts[i]; sh.Signal == sig && !sh.Ended.IsZero() {
			from = max(from, sh.Ended.UnixNano())
		}
	}
	if c.den != nil {
		return s.shareOnset(sig, c, start, from)
	}
	if sig != SigArrivals && !lagged(sig) {
		return s.stepOnset(sig, c, start)
	}
	if sig == SigGenLen {
		// Output means are dated on their scrapes split by latency (see
		// splitLatency), unless the split finds no change in the newest
		// segment: at many requests a scrape (5 s scrapes) the quick and
		// the slow parts alternate a factor of three or more apart, the
		// noise the segmentation assumes is of that size, and a ×4 rise
		// of the answers was one segment with the level before it
		// (changesFleet seed 1 at 5 s: dated at the sum's start, 15 s
		// late). Whole, as before, it was dated within a scrape.
		if on, ok := s.segOnset(sig, c, start, from, post, true); ok {
			return on
		}
	}
	if on, ok := s.segOnset(sig, c, start, from, post, false); ok {
		return on
	}
	return time.Unix(0, start)
}

// segOnset is onset's dating of arrivals and lengths on the segments of
// their points since from (split: output means in parts, see points);
// false where the newest segment is not the change.
func (s *shiftState) segOnset(sig Signal, c *cusum, start, from int64, post float64, split bool) (time.Time, bool) {
	pts := s.points(sig, c, from, split)
	if len(pts) < 2*shiftMinSeg {
		return time.Unix(0, start), true
	}
	info := &signals[sig]
	up := post > c.mean
	counts := sig == SigArrivals
	segs := partition(pts, counts, info.ratio)
	changed := func(lv float64) bool {
		return up == (lv > c.mean) && clearChange(info, c.mean, lv, 0.5) && math.Abs(lv-c.mean) >= math.Abs(post-c.mean)/3
	}
	first := -1
	for k := len(segs) - 1; k >= 0; k-- {
		g := &segs[k]
		if changed(g.level) {
			first = g.from
			continue
		}
		// Arrivals come in bursts, more requests for a while, never
		// fewer: after a fall, a segment back up near the baseline between
		// two at the fallen level is a burst, not the traffic coming back,
		// unless follow would have seen the change end over it (the
		// recent level, shiftFastTau, carried from the segment before it
		// through this one, within half the least change of the
		// baseline). After a rise, a segment back down is the baseline's
		// quiet stretch: the run ends there, and a burst before it is not
		// the change. Means of lengths have no bursts: the run ends.
		// Unless that stretch is a lull of shiftLull at most between two
		// segments of the run, the older one from the CUSUM's start on:
		// a stretch that short is too short a quiet stretch to tell a
		// burst before the change from one on top of it, and the sum,
		// which left zero with the older segment, has not come back
		// since (changesFleet's arrivals replica, seed 10 at 1 s
		// scrapes: the x2.2 rise began with a burst, 13, 17 and 11/s,
		// then 2 and 0: dated after the lull, 8 s late).
		if counts && up && first >= 0 && k > 0 && changed(segs[k-1].level) && pts[segs[k-1].from].ns >= start &&
			time.Duration(pts[g.to-1].ns-pts[g.from].ns+int64(pts[g.from].dt*1e9)) <= shiftLull {
			continue
		}
		if !counts || up || first < 0 || k == 0 || !changed(segs[k-1].level) {
			break
		}
		d := time.Duration(pts[g.to-1].ns - pts[g.from-1].ns).Seconds()
		fast := g.level + (segs[k-1].level-g.level)*math.Exp(-d/shiftFastTau.Seconds())
		if up != (fast > c.mean) || !clearChange(info, c.mean, fast, 0.5) {
			break
		}
	}
	if first < 0 {
		// The newest segment is not the change (it came back while the
		// sum still held): the CUSUM's start.
		return time.Unix(0, start), false
	}
	if first == 0 && start < pts[0].ns {
		return time.Unix(0, start), true
	}
	if first > 0 && lagged(sig) {
		// Placed at their requests' mean arrival, the first changed
		// mean lies after the change (its requests all came after it)
		// and the one before it before: the change lies between them.
		return time.Unix(0, pts[first-1].ns+(pts[first].ns-pts[first-1].ns)/2), true
	}
	return time.Unix(0, pts[first].ns), true
}

// shiftLull is the longest lull of arrivals within a rise's run of
// segments that onset passes over (see there): two 1 s scrapes, the
// fewest a segment holds.
const shiftLull = 2 * time.Second

// lagged says the signal is a mean over finished requests, known only
// as they finish.
func lagged(sig Signal) bool { return sig == SigPromptLen || sig == SigGenLen }

// latencySplit is a scrape's finished requests in two parts by their e2e
// latency: the mean latency of the quicker part and of the slower, 11
// bits each (see codeLatency; 0: none finished), the quicker part's share
// of the requests and of their output tokens, 5 bits each (31sts; a
// share of 1: one part). Four bytes a scrape, as the float32 mean it
// replaces: an endpoint's memory is budgeted (TestFleetHeap).
type latencySplit uint32

func newLatencySplit(lo, hi, f, g float64) latencySplit {
	share := func(x float64) uint32 { return uint32(math.Round(31 * min(max(x, 0), 1))) }
	return latencySplit(codeLatency(lo)<<21 | codeLatency(hi)<<10 | share(f)<<5 | share(g))
}

// parts are the split's latencies, s, and the quicker part's share of
// the requests and of their tokens (NaN latencies: none finished).
func (l latencySplit) parts() (lo, hi, f, g float64) {
	return decodeLatency(uint32(l) >> 21), decodeLatency(uint32(l) >> 10 & 0x7ff), float64(l>>5&31) / 31, float64(l&31) / 31
}

// codeLatency codes a latency, s, in 2046 log steps from 1 ms to about
// 2.7 h (a relative step of 0.8 %); 0 is none.
func codeLatency(x float64) uint32 {
	if !(x >= 0) {
		return 0
	}
	return uint32(1 + math.Round(min(max(math.Log(x*1e3), 0), latencyLogSpan)*2046/latencyLogSpan))
}

func decodeLatency(c uint32) float64 {
	if c == 0 {
		return math.NaN()
	}
	return math.Exp(float64(c-1)*latencyLogSpan/2046) / 1e3
}

// latencyLogSpan is the log of the longest latency coded, in ms.
const latencyLogSpan = 16.3

// splitLatency splits a scrape's finished requests (span seconds of the
// e2e histogram's increase) in two parts by their e2e latency bucket,
// where the spread of the log latency within the parts is least: a
// scrape's output mean placed at its requests' mean arrival was wrong
// just after a change, when it mixes old answers still draining with new
// ones (short-answers' ÷4 at 1 s scrapes, seed 1, 6 s after: one answer
// under 0.5 s, one of 5 to 10 s, a mean of 462 tokens placed at the
// pair's mean arrival 3.2 s before the scrape, after the change, as if at
// the old level): the fall was dated where the mixes ended, 2 to 5 s late
// on most draws. A request decodes its answer a token a step, so the
// slower part holds the longer answers: points places each part at its
// own arrival, its share of the output tokens that of its decode time
// (its latency less ttft, the scrape's mean time to the first token; a
// tenth of its latency at least): the lengths' buckets are not kept,
// their mean is all else that reads them, and where requests queue the
// latency is not the answer's length (a KV cache thrashing, TTFT p95
// 38 s). Each bucket's latency is its middle (the +Inf one's its lower
// bound), scaled to the histogram's exact sum within the bucket. One
// part, at the mean latency, when one bucket holds them all or the
// buckets are not known; none when none finished.
func splitLatency(e2e *histRate, ttft, span float64) latencySplit {
	mean := e2e.mean()
	one := newLatencySplit(mean, mean, 1, 1)
	n := e2e.count * span
	if len(e2e.bounds) == 0 || len(e2e.rates) != len(e2e.bounds) || !(e2e.sum > 0) || !(n > 0) {
		return one
	}
	// The bucket [lo, hi] of bound j, the +Inf one at its lower bound.
	bucket := func(j int) (float64, float64) {
		lo := 0.0
		if j > 0 {
			lo = e2e.bounds[j-1]
		}
		if hi := e2e.bounds[j]; !math.IsInf(hi, 1) {
			return lo, hi
		}
		return lo, lo
	}
	// The occupied buckets, lowest first: their requests, their bucket.
	var cnt, lo, hi [64]float64
	k, prev, mid := 0, 0.0, 0.0
	for j := range e2e.bounds {
		cum := e2e.rates[j] * span
		if c := cum - prev; c > 0.01 && k < len(cnt) {
			cnt[k] = c
			lo[k], hi[k] = bucket(j)
			mid += c * (lo[k] + hi[k]) / 2
			k++
		}
		prev = cum
	}
	if k < 2 || !(mid > 0) {
		return one
	}
	var lat [64]float64
	for i := range k {
		lat[i] = min(max((lo[i]+hi[i])/2*e2e.sum*span/mid, lo[i]), hi[i])
	}
	// The split: least within-part sum of squares of the log latency.
	var s0, s1, s2 float64 // of all: requests, Σ log, Σ log²
	for i := range k {
		x := math.Log(max(lat[i], 1e-3))
		s0 += cnt[i]
		s1 += cnt[i] * x
		s2 += cnt[i] * x * x
	}
	best, at := math.Inf(1), 1
	var a0, a1, a2 float64
	for j := 1; j < k; j++ {
		x := math.Log(max(lat[j-1], 1e-3))
		a0 += cnt[j-1]
		a1 += cnt[j-1] * x
		a2 += cnt[j-1] * x * x
		b0, b1, b2 := s0-a0, s1-a1, s2-a2
		if w := a2 - a1*a1/a0 + b2 - b1*b1/b0; w < best {
			best, at = w, j
		}
	}
	var nl, ll, lh float64
	for i := range k {
		if i < at {
			nl += cnt[i]
			ll += cnt[i] * lat[i]
		} else {
			lh += cnt[i] * lat[i]
		}
	}
	quick, slow := ll/nl, lh/(s0-nl)
	if math.IsNaN(ttft) {
		ttft = 0
	}
	// Decode time: the latency less the time to the first token.
	dq, ds := max(quick-ttft, quick/10), max(slow-ttft, slow/10)
	f := nl / s0
	return newLatencySplit(quick, slow, min(f, 30.0/31), f*dq/(f*dq+(1-f)*ds))
}

// stepOnset dates a change as the likeliest step from the baseline: of
// the recent scrapes, the one after which the observations' departure
// from it is largest for its length (the CUSUM's last departure from zero
// starts early when noise had already lifted it, or late on a change
// smaller than its noise: shiftLead scrapes before it at most). A sharp
// change well above its noise (prompt tokens/s, a GPU's clock, latency)
// is dated so within a scrape or two; a segmentation of such lumpy
// per-scrape values dated it no better.
func (s *shiftState) stepOnset(sig Signal, c *cusum, start int64) time.Time {
	ratio := signals[sig].ratio
	best, bestAt := -1.0, start
	sum, n, lead := 0.0, 0, 0
	for k := range s.seen {
		i := (s.pos - k + shiftRecent) % shiftRecent
		if s.times[i] < start {
			if lead++; lead > shiftLead {
				break
			}
		}
		x := float64(c.recent[i])
		if math.IsNaN(x) || ratio && x <= 0 {
			continue
		}
		if ratio {
			x = math.Log(x)
		}
		sum += x - c.mean
		n++
		if score := sum * sum / float64(n); score > best {
			best, bestAt = score, s.times[i]
		}
	}
	return time.Unix(0, bestAt)
}

// shiftLead is how many scrapes before the CUSUM's start stepOnset may
// place an onset.
const shiftLead = 4

// shareOnset dates a change of a share of counts as the likeliest
// boundary between two levels over the recent scrapes since from, each
// scrape weighed by the count behind it (its denominator), not as one of
// so many equal ratios: a second of a few queried tokens, or of one
// finished request, whose share happened to be 0 tells little, and as an
// equal ratio it pulled the step seconds early. Without the counts,
// stepOnset dates it.
//
// Aborts are of requests, each finished or aborted on its own: the
// binomial likelihood of the aborted among the finished, one level before
// the boundary and one after. Prefix hits are of tokens, which come by
// the prompt (a prompt's thousands of tokens hit or miss together): the
// share alone cannot tell a second of two long prompts that happened to
// miss the shared prefix (a share as low as after the change, on a third
// of the tokens) from the change itself, and the binomial, counting each
// token as a draw, takes those seconds for the change (3 s early). A
// share moves because a part of it changed its rate (longer prompts bring
// more missed tokens at as many hit ones; a prefix made unique turns hits
// into misses), so the step is fitted to two things at once: the tokens
// queried (in log space, where a change is a factor) and the share
// weighed by them, each with its own noise (the profile likelihood of a
// Gaussian per part: the sum of the logs of their residual squares). Its
// boundary is sought over every scrape since from, not only near the
// CUSUM's start as stepOnset's: a sum started again for want of a clear
// level (a prefix hit rate falling by 0.22, against the 0.2 least change,
// before the mean since the sum's start had cleared it) starts late, and
// the onset with it (20 s at 5 s scrapes, 27 s at 1 s).
func (s *shiftState) shareOnset(sig Signal, c *cusum, start, from int64) time.Time {
	type share struct {
		ns   int64
		k, n float64 // the counted part and the count
	}
	pts := make([]share, 0, s.seen)
	var mean float64 // of the counts
	for k := s.seen - 1; k >= 0; k-- {
		i := (s.pos - k + shiftRecent) % shiftRecent
		v, n := float64(c.recent[i]), float64(c.den[i])
		if s.times[i] < from || math.IsNaN(v) || !(n > 0) {
			continue
		}
		pts = append(pts, share{s.times[i], min(max(v, 0), 1) * n, n})
		mean += n
	}
	n := len(pts)
	if n < 2*shiftMinSeg {
		return s.stepOnset(sig, c, start)
	}
	mean /= float64(n)
	// Prefix sums over the points of: for aborts, the aborted and the
	// finished; for tokens, ln(1+queried), its square, the weights
	// (queried over their mean), the weighed share and its square.
	var sum [5][]float64
	for p := range sum {
		sum[p] = make([]float64, n+1)
	}
	tokens := sig == SigPrefixHit
	for i, q := range pts {
		x := [5]float64{q.k, q.n}
		if tokens {
			v, w, r := math.Log1p(q.n), q.n/mean, q.k/q.n
			x = [5]float64{v, v * v, w, w * r, w * r * r}
		}
		for p := range sum {
			sum[p][i+1] = sum[p][i] + x[p]
		}
	}
	part := func(p, i, j int) float64 { return sum[p][j] - sum[p][i] }
	cost := func(j int) float64 {
		if !tokens {
			c := 0.0
			for _, r := range [2][2]int{{0, j}, {j, n}} {
				k, m := part(0, r[0], r[1]), part(1, r[0], r[1])
				c -= xlogx(k, m) + xlogx(m-k, m)
			}
			return c
		}
		var vol, shr float64 // residual squares of both sides
		for _, r := range [2][2]int{{0, j}, {j, n}} {
			a, m := part(0, r[0], r[1]), float64(r[1]-r[0])
			vol += math.Max(0, part(1, r[0], r[1])-a*a/m)
			a, m = part(3, r[0], r[1]), part(2, r[0], r[1])
			shr += math.Max(0, part(4, r[0], r[1])-a*a/m)
		}
		// A tiny floor: a part constant on both sides fits exactly.
		return math.Log(vol+1e-9) + math.Log(shr+1e-9)
	}
	// Aborts come a handful a second: one abort is much of the evidence,
	// and the likelihood is nearly flat over a quiet stretch before the
	// first few (queue-backlog's one cancel 25 s before its aborts began
	// placed the step there). Their boundary lies at most shiftLead scrapes
	// before the CUSUM's start, as stepOnset's. Tokens, thousands a
	// second, place it sharply without.
	lo := int64(math.MinInt64)
	if !tokens {
		lo = start
		for k, lead := 0, 0; k < s.seen; k++ {
			i := (s.pos - k + shiftRecent) % shiftRecent
			if s.times[i] < start {
				if lead++; lead > shiftLead {
					break
				}
				lo = s.times[i]
			}
		}
	}
	best, bestAt := math.Inf(1), start
	for j := shiftMinSeg; j <= n-shiftMinSeg; j++ {
		if pts[j].ns < lo {
			continue
		}
		if c := cost(j); c < best {
			best, bestAt = c, pts[j].ns
		}
	}
	return time.Unix(0, bestAt)
}

// xlogx is k ln(k/n), 0 for none: a binomial log-likelihood's term.
func xlogx(k, n float64) float64 {
	if k <= 0 {
		return 0
	}
	return k * math.Log(k/n)
}

// shiftPoint is one observation placed in time for dating an onset: x
// its value (arrivals: the requests counted), dt the seconds it covers
// (arrivals only).
type shiftPoint struct {
	ns    int64
	x, dt float64
}

// points are a signal's observations in the rings since from, in time
// order: arrivals as counts over their scrape's interval, ratio signals in
// log space, finished requests' means at their requests' mean arrival
// (split: output means in two parts by latency, each at its own, see
// splitLatency).
func (s *shiftState) points(sig Signal, c *cusum, from int64, split bool) []shiftPoint {
	info := &signals[sig]
	lag := lagged(sig)
	pts := make([]shiftPoint, 0, s.seen)
	var parts []shiftPoint // output means split by latency
	var gap float64        // Σ over their scrapes of the log mean less its parts' mean log
	gaps := 0
	for k := s.seen - 1; k >= 0; k-- {
		i := (s.pos - k + shiftRecent) % shiftRecent
		ns := s.times[i]
		v := float64(c.recent[i])
		if ns < from || math.IsNaN(v) {
			continue
		}
		p := shiftPoint{ns: ns, x: v}
		switch {
		case sig == SigArrivals:
			if k == s.seen-1 {
				continue // its interval's start is not in the rings
			}
			p.dt = time.Duration(ns - s.times[(i-1+shiftRecent)%shiftRecent]).Seconds()
			p.x = v * p.dt
		case info.ratio && v <= 0:
			continue
		case info.ratio:
			p.x = math.Log(v)
		}
		if lag {
			lo, hi, f, g := s.lag[i].parts()
			if math.IsNaN(lo) {
				continue
			}
			m := f*lo + (1-f)*hi
			if split && f > 0 && f < 1 && g > 0 && g < 1 && hi > lo && v > 0 {
				// Each part at its own requests' arrival, with its
				// share of the tokens (see splitLatency). The baseline
				// learned the log of scrapes' means, which lies above
				// their parts' mean log: the parts are moved up by the
				// mean gap (below).
				a, b := v*g/f, v*(1-g)/(1-f)
				gap += math.Log(v) - f*math.Log(a) - (1-f)*math.Log(b)
				gaps++
				parts = append(parts, shiftPoint{ns: ns - int64(lo*1e9), x: math.Log(a)}, shiftPoint{ns: ns - int64(hi*1e9), x: math.Log(b)})
				continue
			}
			p.ns -= int64(m * 1e9)
		}
		pts = append(pts, p)
	}
	for _, p := range parts {
		p.x += gap / float64(gaps)
		pts = append(pts, p)
	}
	if lag {
		slices.SortStableFunc(pts, func(a, b shiftPoint) int { return cmp.Compare(a.ns, b.ns) })
	}
	return pts
}

// shiftSeg is one segment of constant level: points [from, to), its
// level in the signal's judging space.
type shiftSeg struct {
	from, to int
	level    float64
}

// shiftMinSeg is the fewest points a segment holds: one lucky scrape is
// not a level.
const shiftMinSeg = 2

// partition splits pts into segments of constant level minimizing twice
// the negative log-likelihood plus a penalty per segment, by optimal
// partitioning. counts: Poisson counts over dt, the penalty BIC's (2 ln n:
// a level and a boundary per segment), so that a burst is a segment of its
// own, apart from the baseline's quiet stretch after it (at 2.5 ln n the
// two were one segment, a baseline a burst had lifted, and the change was
// dated where the new level cleared it, 7 s late). Otherwise Gaussian,
// its deviation the scrape-to-scrape one (robust: the median absolute
// successive difference), floored as the baseline's is, the penalty
// 2.5 ln n: a scrape's mean is of a few requests, heavier-tailed than the
// Gaussian the cost assumes, and a lone long prompt must not be cut out as
// a level.
func partition(pts []shiftPoint, counts, ratio bool) []shiftSeg {
	n := len(pts)
	s1 := make([]float64, n+1) // prefix sums: x (or counts)
	s2 := make([]float64, n+1) // x² (or dt)
	for i, p := range pts {
		s1[i+1] = s1[i] + p.x
		if counts {
			s2[i+1] = s2[i] + p.dt
		} else {
			s2[i+1] = s2[i] + p.x*p.x
		}
	}
	var inv float64 // 1/σ², Gaussian
	if !counts {
		d := make([]float64, 0, n-1)
		for i := 1; i < n; i++ {
			d = append(d, math.Abs(pts[i].x-pts[i-1].x))
		}
		slices.Sort(d)
		// |x1 - x2| of two draws has median 0.954 σ.
		sd := d[len(d)/2] / 0.954
		floor := shiftFloorShare
		if ratio {
			floor = shiftFloorLog
		}
		sd = math.Max(sd, floor)
		inv = 1 / (sd * sd)
	}
	cost := func(i, j int) float64 {
		a, b := s1[j]-s1[i], s2[j]-s2[i]
		if counts {
			if a <= 0 || b <= 0 {
				return 0
			}
			return 2 * (a - a*math.Log(a/b))
		}
		m := float64(j - i)
		return (b - a*a/m) * inv
	}
	beta := 2.5 * math.Log(float64(n))
	if counts {
		beta = 2 * math.Log(float64(n))
	}
	best := make([]float64, n+1)
	prev := make([]int, n+1)
	for j := 1; j <= n; j++ {
		best[j] = math.Inf(1)
		for i := 0; i <= j-shiftMinSeg; i++ {
			if i > 0 && i < shiftMinSeg {
				continue
			}
			if c := best[i] + cost(i, j) + beta; c < best[j] {
				best[j], prev[j] = c, i
			}
		}
	}
	var segs []shiftSeg
	for j := n; j > 0; j = prev[j] {
		i := prev[j]
		a, b := s1[j]-s1[i], s2[j]-s2[i]
		lv := a / float64(j-i)
		if counts {
			lv = math.Log(a / b) // -Inf for none: below any level
		}
		segs = append(segs, shiftSeg{from: i, to: j, level: lv})
		if i == 0 {
			break
		}
	}
	slices.Reverse(segs)
	return segs
}

// follow updates an open change and ends it when the level is back at
// the baseline, or makes it the baseline after shiftAccept.
func (s *shiftState) follow(sig Signal, c *cusum, t time.Time) {
	info := &signals[sig]
	sh := &s.shifts[c.active-1]
	post := c.post()
	sh.After = level(info, post)
	if sig == SigArrivals {
		s.redate(sig, c, sh, post, t)
	}
	switch {
	case !clearChange(info, c.mean, c.fast, 0.5):
		// The recent level is back near the baseline.
		sh.Ended = t
	case t.Sub(sh.Onset) >= shiftAccept:
		sh.Ended, sh.Accepted = t, true
		c.mean = post
		if lv := s.levelSince(c, sh.Onset.UnixNano()); c.blk != nil && lv > 0 {
			c.blk.mean, c.blk.pending = math.Log(lv), c.blk.pending[:0]
		}
	default:
		return
	}
	c.active = 0
	c.restart()
}

// redate dates an arrivals change again once it has held as long again
// as it needed to be found (Detected + hold), the level since known
// better: a change found while a burst on top of it lasted was dated at
// the burst, its first scrapes (between the baseline and the burst) not
// a third of the way to a level the burst had lifted (seed 6's busy
// replica at 5 s scrapes: 6.8 and 4.6/s after the change at 3.9/s, then
// ×4 for 45 s; dated 15 s late: TestShiftRiseUnderABurstDatedAgain). The onset moves by shiftLead scrapes at
// most, as stepOnset's before the CUSUM's start: a burst just before the
// change is a level between as well, and a segment of it joined to the
// change's (seed 11's busy replica at 1 s: 12 s early), and never after
// Detected.
func (s *shiftState) redate(sig Signal, c *cusum, sh *Shift, post float64, t time.Time) {
	hold := signals[sig].hold
	prev := time.Unix(0, s.times[(s.pos-1+shiftRecent)%shiftRecent])
	if t.Sub(sh.Detected) < hold || prev.Sub(sh.Detected) >= hold {
		return
	}
	on := s.onset(sig, c, sh.Onset.UnixNano(), post)
	if on.After(sh.Detected) {
		return
	}
	lo, hi := min(on.UnixNano(), sh.Onset.UnixNano()), max(on.UnixNano(), sh.Onset.UnixNano())
	moved := 0
	for k := range s.seen {
		if ns := s.times[(s.pos-k+shiftRecent)%shiftRecent]; ns >= lo && ns < hi {
			moved++
		}
	}
	if moved <= shiftLead {
		sh.Onset = on
	}
}

// shiftBurst: a rise of traffic (arrivals, prompt tokens/s) back at its
// baseline within this of its onset, and staying there, was a burst, not
// a change of the workload, though it outlasted the hold: traffic comes
// in bursts (the simulator's chat traffic: ×2.5 for 10 s on average,
// exponential, so now and then for a minute; seed 2's steady replica,
// ×2.6 for 50 s, was reported as a change at both intervals); a change
// persists. Twice the longest hold of a traffic signal plus the recent
// level's time to come back.
const shiftBurst = 2 * time.Minute

// shiftSettle is how long after a rise ended its level is read to judge
// it a burst: a change ends when the recent level dips near a baseline
// that bursts had lifted, and its level stays up after (seed 11's busy
// replica: ×2.2 on 3/s, its baseline 4.2/s, ended 30 s after it was
// found, 6.6/s since); a burst's comes back to the baseline.
const shiftSettle = 30 * time.Second

// dropBursts forgets, shiftSettle after they ended, the rises of traffic
// that came back within shiftBurst and whose level since, between bursts
// (betweenBursts), is not half the least change above their baseline
// (the hysteresis an end needs), and reads the level since the end of
// those still up again twice shiftSettle after it: 30 s holds a handful
// of levels between a batch job's bursts, which come close together now
// and then, and the scrapes at a burst's edges hold part of it (at 5 s
// scrapes a segment of two scrapes takes one in). Over 20 seeds x 30 min
// of batch-job-bursts the level 30 s after read up to 1.4 (1 s scrapes)
// and 1.8 times (5 s) the level before, and 3 rises were kept where the
// traffic between bursts had not moved. A change holds its level over
// the longer span too, and is kept. Also forgotten: the changes of
// latency found with them (opened at the same scrape) that also came
// back within shiftBurst: what users felt during the burst. A change of
// another kind found with a burst is kept. Prompt tokens/s found with a
// rise of arrivals goes as the arrivals go: a second's prompt tokens are a sum
// of lengths spread over a factor of ten, whose segments are no sure
// level (judged on its own, TestShiftOnsets' seed 11 busy lost its rise
// of arrivals with the prompt tokens/s found with it). The level since
// the end was its mean, which a batch job's next burst within the 30 s
// (8x for 4 s) lifts by a clear factor: the rise was kept. The times of
// the bursts' detection are kept (shiftBurstKeep) for the changes found
// with them that end later.
func (s *shiftState) dropBursts(t time.Time, dt time.Duration) {
	short := func(sh *Shift) bool {
		return !sh.Ended.IsZero() && !sh.Accepted && sh.Ended.Sub(sh.Onset) < shiftBurst
	}
	var dropped int64 // the detection of the arrivals' rise judged a burst now
	for i := range s.shifts {
		sh := &s.shifts[i]
		if !traffic(sh.Signal) || !(sh.After > sh.Before) || !short(sh) {
			continue
		}
		since := t.Sub(sh.Ended)
		at := shiftSettle
		if sh.settled {
			at = 2 * shiftSettle
		}
		if since < at || since-dt >= at {
			continue // judged shiftSettle after it ended, and again if still up
		}
		if sh.Signal == SigPromptTok && slices.ContainsFunc(s.shifts, func(a Shift) bool {
			return a.Signal == SigArrivals && a.Detected.Equal(sh.Detected) && a.After > a.Before
		}) {
			continue // judged as the arrivals found with it are
		}
		// Prompt tokens/s found alone is judged by the arrivals' level:
		// a count, a surer level than a sum of lengths spread over a
		// factor of ten (a rise of it kept on its own level 1.35 and
		// 1.44 times the one before, 60 s after it ended, where the
		// arrivals between bursts had not moved: batch-job-bursts at 1 s
		// scrapes, seeds 27 and 33). Longer prompts are the prompt
		// mean's change, judged on its own.
		by := sh.Signal
		if by == SigPromptTok {
			by = SigArrivals
		}
		info := &signals[by]
		c := &s.sig[by]
		lv := s.betweenBursts(by, c, sh.Ended.UnixNano(), true)
		ref := sh.ref
		if !sh.settled {
			// Read once: the rings may no longer reach before the onset.
			if ref = s.levelBefore(by, c, sh.Onset.UnixNano()); math.IsNaN(ref) && by == sh.Signal {
				ref = math.Log(sh.Before)
			} else if math.IsNaN(ref) {
				ref = c.mean
			}
			// The segments before the rise, their level the one below
			// which half their time was spent, read low where a few
			// lulls were cut out of the traffic between bursts (2.2 and
			// 2.4/s on 3.0/s: batch-job-bursts at 1 s scrapes, seeds 25
			// and 49, a rise of 30 s kept with the level after it at
			// 3.0 and 3.3/s); the blocks' baseline, learned a hold
			// after the fact and over the traffic between bursts, read
			// about 2.9 and 3.2/s. The higher of the two: either may be
			// low.
			if sh.between > 0 {
				ref = math.Max(ref, math.Log(sh.between))
			}
		}
		if math.IsNaN(lv) || lv > ref && clearChange(info, ref, lv, 0.5) {
			if !sh.settled {
				sh.settled, sh.ref = true, ref
			}
			continue
		}
		if sh.Signal == SigArrivals {
			dropped = sh.Detected.UnixNano()
		}
		if len(s.bursts) == shiftBurstKeep {
			s.bursts = s.bursts[1:]
		}
		s.bursts = append(s.bursts, sh.Detected.UnixNano())
	}
	burst := func(sh *Shift) bool {
		if sh.Signal == SigArrivals {
			return sh.After > sh.Before && short(sh) && dropped == sh.Detected.UnixNano()
		}
		if sh.Signal == SigPromptTok && !(sh.After > sh.Before) {
			return false
		}
		return short(sh) && (traffic(sh.Signal) || sh.Kind == ShiftSymptom) && slices.Contains(s.bursts, sh.Detected.UnixNano())
	}
	n := 0
	for i := range s.shifts {
		if burst(&s.shifts[i]) {
			n++
		}
	}
	if n == 0 {
		return
	}
	// A fresh array: readers hold the old one.
	keep := make([]Shift, 0, len(s.shifts)-n+8)
	for i := range s.shifts {
		if !burst(&s.shifts[i]) {
			keep = append(keep, s.shifts[i])
			continue
		}
		// The open changes' indexes after it move down by one.
		for k := range s.sig {
			if s.sig[k].active > len(keep) {
				s.sig[k].active--
			}
		}
	}
	s.shifts = keep
}

// levelSince is a signal's mean over the scrapes in the rings after
// from, each weighed by its interval (a rate's mean over the time), NaN
// when none.
func (s *shiftState) levelSince(c *cusum, from int64) float64 {
	var sum, span float64
	for k := 0; k < s.seen-1; k++ {
		i := (s.pos - k + shiftRecent) % shiftRecent
		if s.times[i] <= from {
			break
		}
		v := float64(c.recent[i])
		if math.IsNaN(v) {
			continue
		}
		dt := time.Duration(s.times[i] - s.times[(i-1+shiftRecent)%shiftRecent]).Seconds()
		sum += v * dt
		span += dt
	}
	return sum / span
}

// shiftBurstKeep is how many bursts' detection times are kept.
const shiftBurstKeep = 8

// start is the CUSUM's last departure from zero, of the larger sum.
func (c *cusum) start() int64 {
	if c.lo > c.hi {
		return c.loStart
	}
	return c.hiStart
}

// rebase takes post as the baseline, and reports no change, when the
// baseline was learned for less time before the change's start than the
// change has lasted: a level held longer than the one before it is no
// less the normal (a replica opened inside a start-up burst learned the
// burst, and its end read as a fall that a later rise only ended).
func (c *cusum) rebase(start int64, t time.Time, post float64) bool {
	if start-c.first >= t.UnixNano()-start {
		return false
	}
	c.mean = post
	c.restart()
	return true
}

// restart sets both sums and the level since their start to zero.
func (c *cusum) restart() {
	c.hi, c.lo, c.postSum, c.postN, c.postK, c.postDen = 0, 0, 0, 0, 0, 0
}

// post is the level since the sums' start. A share of counts is the
// share of all the counts since, not the mean of each scrape's share: a
// batch job's burst queues, and of its requests the few users stop
// within seconds finish first, a second or three of one finished request
// aborted (a share of 1) while the rest wait (batch-job-bursts at 1 s
// scrapes, seed 11: 7 aborts of 212 finished in the 17 s from the first,
// 0.033, read as 0.22 from the scrapes' mean: a change of the abort share
// opened with the TTFT the burst lifted, on 4 of 20 seeds over 30 min).
func (c *cusum) post() float64 {
	if c.den != nil && c.postDen > 0 {
		return c.postK / c.postDen
	}
	return c.postSum / float64(c.postN)
}

// learn moves the baseline toward x (aMean for the level, aVar for its spread).
func (c *cusum) learn(x, aVar, aMean float64) {
	d := x - c.mean
	c.mean += aMean * d
	c.m2 = (1-aVar)*c.m2 + aVar*d*d
}

// clearChange says post is at least part of the signal's least change
// away from base (part below 1: the hysteresis a change needs to end).
func clearChange(info *signalInfo, base, post, part float64) bool {
	if info.ratio {
		return math.Abs(post-base) >= part*math.Log(info.effect)
	}
	return math.Abs(post-base) >= part*info.effect
}

func level(info *signalInfo, x float64) float64 {
	if info.ratio {
		return math.Exp(x)
	}
	return x
}

// open appends a change; a full log starts a fresh array (readers hold the
// old one) and forgets the oldest ended ones.
func (s *shiftState) open(sh Shift) {
	if b := s.sig[SigArrivals].blk; traffic(sh.Signal) && b != nil && b.n > shiftBlockWarm {
		sh.between = math.Exp(b.mean)
	}
	keep := s.shifts
	cut := 0
	for cut < len(keep) && !keep[cut].Ended.IsZero() &&
		(sh.Detected.Sub(keep[cut].Ended) > shiftRetain || len(keep)-cut >= shiftKeep) {
		cut++
	}
	if cut > 0 || len(keep) == cap(keep) {
		keep = append(make([]Shift, 0, min(len(keep)-cut+8, shiftKeep)), keep[cut:]...)
		// Open changes' indexes move with the cut.
		for i := range s.sig {
			if s.sig[i].active > 0 {
				s.sig[i].active -= cut
			}
		}
	}
	s.shifts = append(keep, sh)
}

// view is the shifts within shiftRetain of now, copied: open ones change
// in place as the level is followed.
func (s *shiftState) view(now time.Time) []Shift {
	var out []Shift
	for _, sh := range s.shifts {
		if sh.Ended.IsZero() || now.Sub(sh.Ended) <= shiftRetain {
			out = append(out, sh)
		}
	}
	return out
}

// burstsOnly says a rise of traffic is bursts on an unchanged level: its
// level between bursts since start (betweenBursts) is not half the least
// change above the baseline. A periodic batch job (batch-job-bursts: 8x
// for about 4 s, about every 40 s, now and then for 10 s or more) lifts
// the mean since the sum's start by a clear factor when two or three of
// its bursts come close together, and held the sum past the threshold
// for a hold; the level between them had not moved. A change moves the
// level between bursts with it. The sum is kept: a change that began
// with a burst is found once its level holds.
func (s *shiftState) burstsOnly(sig Signal, c *cusum, start int64, post float64) bool {
	if !traffic(sig) || !(post > c.mean) {
		return false
	}
	lv := s.betweenBursts(sig, c, start, false)
	return !math.IsNaN(lv) && (lv <= c.mean || !clearChange(&signals[sig], c.mean, lv, 0.5))
}

// levelBefore is a traffic signal's level between bursts over its
// scrapes in the rings before until, NaN when they span less than twice
// shiftSettle: what the level between bursts after a rise is compared
// with, the same measure over a longer span (over 30 s it read 2.4/s
// before a chat burst on 2.8/s, and the burst was kept: changesFleet's
// steady replica, seed 15 at 1 s). The rise's baseline, a mean
// of the logs of each scrape's count, is not one: it is lifted by the
// bursts it learned (a x2.2 rise under a batch job's bursts at 5 s
// scrapes, its level between bursts after it ended within half the least
// change of that baseline, was forgotten: TestShiftRiseUnderRecurring-
// Bursts), and reads low at a few counts a scrape (a count of 1 or 2
// weighs as much as one of 5 or 9).
func (s *shiftState) levelBefore(sig Signal, c *cusum, until int64) float64 {
	pts := s.points(sig, c, math.MinInt64, false)
	n := 0
	for n < len(pts) && pts[n].ns < until {
		n++
	}
	if n < 2*shiftMinSeg || time.Duration(pts[n-1].ns-pts[0].ns) < 2*shiftSettle {
		return math.NaN()
	}
	return s.levelOf(sig, pts[:n], false)
}

// betweenBursts is the level of a traffic signal between its bursts over
// its scrapes in the rings from from on, in log space: they are split
// into segments of constant level (see partition), the segments above
// both their neighbours are bursts (a burst comes back to the level
// around it), and of the rest the level below which half their time was
// spent. NaN when too few scrapes to split. edges: a segment at either
// end above its one neighbour is taken for a burst too, for the level
// after a rise ended: the rise's own tail at the start, or a burst still
// going at the end (a batch job's burst at 15.5/s read as the level 60 s
// after a rise, against 3.2/s before: batch-job-bursts at 5 s scrapes,
// seed 27), is not that level; a new rise there is a change of its own,
// found as such. Not so for the level since a rise's start, which may
// begin in the baseline before the change and end in the change itself.
func (s *shiftState) betweenBursts(sig Signal, c *cusum, from int64, edges bool) float64 {
	pts := s.points(sig, c, from, false)
	if len(pts) < 2*shiftMinSeg {
		return math.NaN()
	}
	return s.levelOf(sig, pts, edges)
}

// levelOf is betweenBursts' level of the points pts.
func (s *shiftState) levelOf(sig Signal, pts []shiftPoint, edges bool) float64 {
	segs := partition(pts, sig == SigArrivals, signals[sig].ratio)
	type lvl struct {
		x float64
		d int64
	}
	var rest []lvl
	var total int64
	for k, g := range segs {
		// Above the segment at j, or j is past an end.
		above := func(j int) bool { return j < 0 || j >= len(segs) || g.level > segs[j].level }
		if len(segs) > 1 && (edges || k > 0 && k < len(segs)-1) && above(k-1) && above(k+1) {
			continue
		}
		d := pts[g.to-1].ns - pts[g.from].ns
		if sig == SigArrivals {
			// A count covers the interval before its scrape.
			d += int64(pts[g.from].dt * 1e9)
		}
		rest = append(rest, lvl{g.level, d})
		total += d
	}
	slices.SortFunc(rest, func(a, b lvl) int { return cmp.Compare(a.x, b.x) })
	var cum int64
	for _, r := range rest {
		if cum += r.d; 2*cum >= total {
			return r.x
		}
	}
	return math.NaN()
}

// traffic says the signal is what clients send, which comes in bursts.
func traffic(sig Signal) bool { return sig == SigArrivals || sig == SigPromptTok }

// draining says the finished requests' means are no level now: the
// arrivals' recent level (shiftFastTau) was more than 1.5 times their
// least change above the baseline (x2.4) within the last shiftSettle, no
// change of theirs open for shiftBurst (a burst is reported while it
// lasts; a change that holds is the level). Such a burst queues, and of
// its requests the short ones finish first, the long ones seconds later
// as the queue drains: a batch job's burst of 20 s at 8x (batch-job-
// bursts, seed 3 at 1 s scrapes: the requests' e2e latency 2 s before
// it, 13 s after) read as output mean 205 -> 121 tokens for 30 s, dated
// at the burst. A change of lengths holds past the drain. The abort
// share moves so too (the requests users stop within seconds finish
// before the rest: 0.15-0.17 for 20 s on 4 of 20 seeds over 30 min), but
// gated so, abort-storm's aborts, with its retries' arrivals, were found
// on 26 draws of 30, not 30. Chat traffic's bursts (2.5x) do not reach
// the gate: on the arrivals' sum past its threshold instead, a longer
// answers' change under one was found later and dated 3.3 s late
// (changesFleet seed 6 at 1 s).
func (s *shiftState) draining(sig Signal) bool {
	return lagged(sig) && !s.last.After(s.drainUntil)
}

// shiftMinEvents is the fewest counted events (aborts, hit tokens) a
// change of a share rests on beyond what its baseline expects: a Poisson
// count of three where a handful of a hundredth is expected is no chance;
// one is (night-trickle, a request every ten seconds, 1 % of them stopped
// by their user: seed 13 at both intervals, one abort among the four
// requests finished in 35 s, a share of 0.25, opened as a change).
const shiftMinEvents = 3

// shiftShareZ is how many standard errors of a share of so many draws a
// change of a share must be (see fewEvents).
const shiftShareZ = 3

// fewEvents says a share of counts moved on fewer than shiftMinEvents
// counted events beyond those its baseline expects, or by less than
// shiftShareZ standard errors of a share of as many draws as it rests on,
// each taken as whole (the share at the middle of the baseline and the
// level since): requests for the abort share and the answers cut off;
// prompts for the prefix hit
// rate, whose tokens hit or miss by the prompt (a prompt's shared prefix
// is cached or not), counted as the tokens queried over the baseline's
// mean prompt. At a request every ten seconds (night-trickle) a hold
// holds a handful of prompts, and a run of them with a cached prefix
// read as a change: seed 45 at 1 s, 0.149 -> 0.59 over 7 prompts of about
// 1k tokens, 512 of each a hit (kept at 0.33, never ended).
func (s *shiftState) fewEvents(sig Signal, c *cusum) bool {
	if c.den == nil || !(c.postDen > 0) {
		return false
	}
	if math.Abs(c.postK-c.mean*c.postDen) < shiftMinEvents {
		return true
	}
	n := c.postDen
	if sig == SigPrefixHit {
		p := &s.sig[SigPromptLen]
		if p.n == 0 {
			return false
		}
		n /= math.Exp(p.mean)
	}
	post := c.postK / c.postDen
	m := min(max((post+c.mean)/2, 0), 1)
	return math.Abs(post-c.mean) < shiftShareZ*math.Sqrt(m*(1-m)/n)
}

// drainedOnly says a mean of finished requests moved because which
// requests finished moved, not their lengths: the mean over all the
// requests finished since the sum's start (each scrape's mean weighed by
// the requests behind it) is no clear change. A burst that queues
// finishes its short requests first, a scrape of a few short ones, then
// the long ones (batch-job-bursts at 5 s scrapes, seed 18: an output mean
// of 44 tokens from the one request finished in the scrape the burst
// ended, 182 from the next's 149, on a baseline of 226: a fall ÷2.5 by
// the scrapes' means, 181 by the requests', opened with the TTFT the
// burst lifted, its arrivals' recent level ×2.3, just short of
// draining's gate). A change of lengths moves every request's.
func (s *shiftState) drainedOnly(sig Signal, c *cusum) bool {
	return lagged(sig) && c.postDen > 0 && !clearChange(&signals[sig], c.mean, math.Log(c.postK/c.postDen), 1)
}

// markDrain notes a burst of arrivals that queues (see draining).
func (s *shiftState) markDrain(t time.Time) {
	a := &s.sig[SigArrivals]
	// An open rise may yet be a burst until shiftBurst has passed.
	young := a.active == 0 || t.Sub(s.shifts[a.active-1].Onset) < shiftBurst
	if a.n > shiftWarm && young && a.fast-a.mean >= 1.5*math.Log(signals[SigArrivals].effect) {
		s.drainUntil = t.Add(shiftSettle)
	}
}
