package diagnose

import (
	"math"
	"sort"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// What the GPU rules read, all on the Frame (times come with the data):
//   - Frame.GPU: the latest reading; GPU.GPUs[i] has every field, Problem
//     (lost GPU), Throttled and ClockEventBits; Notes and Unavailable say
//     what this host cannot tell.
//   - Frame.GPUSeries[i]: GPU i's history (Points), and ThrottledSince /
//     ThrottleReasons for "throttled for 2 minutes by power cap".
//   - Frame.GPUEvents: XID events within Config.XIDRetention;
//     sources.LookupXID(x).Action says reset, drain, reboot or restart.
//   - EndpointView.GPU: the endpoint's GPUs, MemBytes and Hist (its share
//     over time) for per-endpoint memory growth.
// GPUWindow, GPUMean and GPUThrottledShare work on any []GPUPoint.
// Values of a lost GPU are NaN (an endpoint's MemUsed too), so GPUMean
// passes over them.

// GPUPoint is one reading of one GPU, or of one endpoint's share of its
// GPUs, kept for the rules. NaN is unknown.
type GPUPoint struct {
	Time        time.Time
	UtilGPU     float64            // percent; an endpoint: mean over its GPUs
	UtilMem     float64            // percent of time memory was read or written; an endpoint: mean
	MemUsed     float64            // bytes; an endpoint: what its processes hold
	MemTotal    float64            // bytes; an endpoint: the total of its GPUs
	TempC       float64            // an endpoint: its hottest GPU
	PowerW      float64            // an endpoint: summed over its GPUs
	ClockEvents sources.ClockEvent // an endpoint: any of its GPUs
	Lost        bool               // the GPU had a Problem (lost, needs reset); an endpoint: any of its GPUs
}

// Throttled reports a thermal, power or hardware slowdown in this reading.
func (p GPUPoint) Throttled() bool { return p.ClockEvents.Throttling() }

// GPUSeries is the kept history of one GPU. Frame.GPUSeries[i] belongs to
// Frame.GPU.GPUs[i].
type GPUSeries struct {
	Index  int
	UUID   string
	Name   string
	Points []GPUPoint // oldest first; shared and read-only
	// ThrottledSince is the first reading of the current unbroken run of
	// throttled readings (zero when the newest is not throttled), and
	// ThrottleReasons every throttling reason seen in that run.
	ThrottledSince  time.Time
	ThrottleReasons sources.ClockEvent
}

// GPUWindow returns the points in (now-w, now], oldest first; a subslice.
func GPUWindow(pts []GPUPoint, now time.Time, w time.Duration) []GPUPoint {
	start := now.Add(-w)
	i := sort.Search(len(pts), func(i int) bool { return pts[i].Time.After(start) })
	j := sort.Search(len(pts), func(j int) bool { return pts[j].Time.After(now) })
	return pts[i:j]
}

// GPUMean is the mean of v over the points where it is known; NaN if none.
func GPUMean(pts []GPUPoint, v func(GPUPoint) float64) float64 {
	sum, n := 0.0, 0
	for _, p := range pts {
		if x := v(p); !math.IsNaN(x) {
			sum += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// GPUThrottledShare is the share of readings (of a GPU that was readable)
// with a thermal, power or hardware slowdown; NaN when there are none.
func GPUThrottledShare(pts []GPUPoint) float64 {
	n, th := 0, 0
	for _, p := range pts {
		if p.Lost {
			continue
		}
		n++
		if p.Throttled() {
			th++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return float64(th) / float64(n)
}

// gpuRing keeps the newest points, bounded by age and count. Readers get
// slices that are never written again: old points leave by re-slicing the
// front, new ones go past every reader's length, and a full array is
// replaced by a fresh one (the old one stays with its readers).
type gpuRing struct {
	pts    []GPUPoint
	max    int
	retain time.Duration
}

func (r *gpuRing) push(p GPUPoint) {
	if n := len(r.pts); n > 0 && p.Time.Before(r.pts[n-1].Time) {
		return // out of order: keep the series sorted
	}
	cut := 0
	for cut < len(r.pts) && p.Time.Sub(r.pts[cut].Time) > r.retain {
		cut++
	}
	if over := len(r.pts) - cut + 1 - r.max; over > 0 {
		cut += over
	}
	r.pts = r.pts[cut:]
	if len(r.pts) == cap(r.pts) {
		fresh := make([]GPUPoint, len(r.pts), len(r.pts)+r.max/2+1)
		copy(fresh, r.pts)
		r.pts = fresh
	}
	r.pts = append(r.pts, p)
}

// NewGPUPoint is the reading of one GPU as a point.
func NewGPUPoint(t time.Time, g *sources.GPU) GPUPoint {
	return GPUPoint{Time: t, UtilGPU: g.UtilGPU, UtilMem: g.UtilMem, MemUsed: g.MemUsed, MemTotal: g.MemTotal,
		TempC: g.TempC, PowerW: g.PowerW, ClockEvents: g.ClockEventBits, Lost: g.Problem != ""}
}
