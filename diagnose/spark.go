package diagnose

import (
	"slices"
	"time"
)

// Spark names one sparkline series.
type Spark uint8

const (
	SpTTFT       Spark = iota // TTFT p95, s
	SpITL                     // inter-token p95, s
	SpE2E                     // E2E p95, s
	SpQueue                   // queue time p95, s
	SpKV                      // KV usage 0..1
	SpPrefixHit               // prefix-cache hit ratio 0..1
	SpPreempt                 // preemptions/s
	SpRunning                 // requests running
	SpWaiting                 // requests waiting
	SpSwapped                 // requests swapped (V0)
	SpPromptTok               // prompt tokens/s
	SpGenTok                  // generation tokens/s
	SpReq                     // finished requests/s
	SpAbort                   // abort share 0..1
	SpSpecAccept              // speculative acceptance 0..1
	SpKVXferFail              // failed KV transfers/s
	NumSpark
)

// SparkPoint is one sparkline sample: the Stats of a short window ending at T.
type SparkPoint struct {
	UnixMilli int64
	V         [NumSpark]float32 // NaN: unknown
}

// Time returns the point's time.
func (p SparkPoint) Time() time.Time { return time.UnixMilli(p.UnixMilli) }

func sparkPoint(t time.Time, s *Stats) SparkPoint {
	p := SparkPoint{UnixMilli: t.UnixMilli()}
	set := func(i Spark, v float64) { p.V[i] = float32(v) }
	set(SpTTFT, sparkP95(&s.TTFT))
	set(SpITL, sparkP95(&s.ITL))
	set(SpE2E, sparkP95(&s.E2E))
	set(SpQueue, sparkP95(&s.Queue))
	set(SpKV, s.KVUsage)
	set(SpPrefixHit, s.PrefixHitRatio)
	set(SpPreempt, s.PreemptionsRate)
	set(SpRunning, s.Running)
	set(SpWaiting, s.Waiting)
	set(SpSwapped, s.Swapped)
	set(SpPromptTok, s.PromptTokRate)
	set(SpGenTok, s.GenTokRate)
	set(SpReq, s.ReqRate)
	set(SpAbort, s.AbortShare)
	set(SpSpecAccept, s.SpecAcceptRate)
	set(SpKVXferFail, s.KVXferFailRate)
	return p
}

// sparkP95 is the p95 a sparkline draws. One inside the first bucket is
// only known to be at most that bucket's bound (vLLM's queue-time buckets
// start at 0.3 s, so an idle queue's p95 interpolates to 0.285 s): it is
// drawn as 0, the lowest block, not as a height the buckets cannot tell.
func sparkP95(q *Quantiles) float64 {
	if q.Lowest > 0 && q.P95 <= q.Lowest {
		return 0
	}
	return q.P95
}

// The long history: one point per LongStep (the largest value of each
// series over the step, so a spike survives), LongPoints of them: half an
// hour a sparkline can draw by downsampling, beside the per-poll ring.
const (
	LongStep   = 10 * time.Second
	LongPoints = 180
)

// sparkRing keeps the newest points of a series, and the long history.
// Readers get slices that are never written again: new points go past every
// reader's length, and when the array is full a fresh one is started (the
// old one stays with its readers).
type sparkRing struct {
	pts  []SparkPoint
	max  int
	long []SparkPoint
	acc  SparkPoint // the long step being gathered
	accN int
}

func (r *sparkRing) push(p SparkPoint) {
	if r.max <= 0 {
		r.max = 240
	}
	r.pts = appendRing(r.pts, p, r.max)
	if r.accN == 0 {
		r.acc = p
	} else {
		r.acc.UnixMilli = p.UnixMilli
		for i, v := range p.V {
			if a := r.acc.V[i]; a != a || v > a { // NaN never wins over a value
				r.acc.V[i] = v
			}
		}
	}
	r.accN++
	if n := len(r.long); n == 0 || r.acc.UnixMilli-r.long[n-1].UnixMilli >= LongStep.Milliseconds() {
		r.long = appendRing(r.long, r.acc, LongPoints)
		r.accN = 0
	}
}

// appendRing appends p to a ring of at most limit points, starting a fresh
// array when the current one is full. The spare (a sixteenth, at least 8
// points, then up to the allocation's size class, which the heap spends
// anyway) bounds how often a fresh array is made, each copying limit-1
// points: every 16 polls of the 240-point ring (16 KiB), every 120 s of
// the long history (12 KiB). A spare quarter cost 8 KiB a target more,
// held for good. The array is written through at once so its pages are
// resident from the start, not over the half hour the long history takes
// to fill (a soak sees flat memory sooner).
// A ring's first array holds a few points only: a report of 2,000 replicas
// read once through Prometheus holds one point each, not 62 MB of empty
// half hours; the full array follows at the fifth point.
func appendRing(pts []SparkPoint, p SparkPoint, limit int) []SparkPoint {
	if len(pts) == cap(pts) {
		size := limit + max(limit/16, 8)
		if len(pts) == 0 {
			size = min(size, firstSpark)
		}
		keep := min(len(pts), limit-1)
		fresh := slices.Grow([]SparkPoint(nil), size)
		fresh = fresh[:cap(fresh)]
		clear(fresh)
		pts = append(fresh[:0], pts[len(pts)-keep:]...)
	}
	return append(pts, p)
}

// firstSpark is the size of a sparkline ring's first array.
const firstSpark = 4

func (r *sparkRing) view() []SparkPoint { return tail(r.pts, r.max) }

// longView is the long history, oldest first (shared, read-only).
func (r *sparkRing) longView() []SparkPoint { return tail(r.long, LongPoints) }

func tail(pts []SparkPoint, n int) []SparkPoint {
	if len(pts) > n {
		return pts[len(pts)-n:]
	}
	return pts
}
