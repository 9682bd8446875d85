package diagnose

import (
	"math"
	"time"
)

// Trend is what an endpoint's queue and batch did over the window, from its
// sparkline: the inputs of the rules that ask whether a queue grows or a
// batch sits on a plateau. It is derived when a scrape arrives, with the
// stats, so every rule and scope reads the same numbers.
type Trend struct {
	WaitSlope float64       // waiting requests per second, least squares over the window; NaN unknown
	RunMean   float64       // mean running requests over the window; NaN unknown
	RunMin    float64       // fewest running at any point of the window; NaN unknown
	RunMax    float64       // most running at any point of the window; NaN unknown
	WaitMean  float64       // mean waiting requests; NaN unknown
	WaitMin   float64       // fewest waiting at any point; NaN unknown
	WaitMax   float64       // most waiting at any point; NaN unknown
	WaitEmpty float64       // share of the points with nothing waiting; NaN unknown
	WaitFor   time.Duration // how long requests have waited without a break, up to the newest point
	SwapMax   float64       // most requests swapped at any point (V0); NaN unknown
	Span      time.Duration // from the oldest to the newest point with a waiting count
	Points    int           // points with a waiting count
}

// UnknownTrend is a trend with every number unknown.
func UnknownTrend() Trend {
	n := math.NaN()
	return Trend{WaitSlope: n, RunMean: n, RunMin: n, RunMax: n, WaitMean: n, WaitMin: n, WaitMax: n, WaitEmpty: n, SwapMax: n}
}

// TrendOf derives the trend from a sparkline's points (oldest first) over
// the window ending at now.
func TrendOf(pts []SparkPoint, now time.Time, window time.Duration) Trend {
	tr := UnknownTrend()
	if len(pts) < 3 {
		return tr
	}
	from := now.Add(-window).UnixMilli()
	var n, sx, sy, sxx, sxy, run, runN, empty float64
	var first, last, since int64
	broken := false
	t0 := pts[len(pts)-1].UnixMilli
	for i := len(pts) - 1; i >= 0; i-- {
		p := &pts[i]
		if p.UnixMilli < from {
			break
		}
		if r := float64(p.V[SpRunning]); !math.IsNaN(r) {
			run += r
			runN++
			tr.RunMin, tr.RunMax = NaNMin(tr.RunMin, r), NaNMax(tr.RunMax, r)
		}
		tr.SwapMax = NaNMax(tr.SwapMax, float64(p.V[SpSwapped]))
		w := float64(p.V[SpWaiting])
		if math.IsNaN(w) {
			continue
		}
		tr.WaitMin, tr.WaitMax = NaNMin(tr.WaitMin, w), NaNMax(tr.WaitMax, w)
		if w < 1 {
			empty++
			broken = true
		} else if !broken {
			since = p.UnixMilli
		}
		t := float64(p.UnixMilli-t0) / 1000
		n++
		sx += t
		sy += w
		sxx += t * t
		sxy += t * w
		if last == 0 {
			last = p.UnixMilli
		}
		first = p.UnixMilli
	}
	if runN > 0 {
		tr.RunMean = run / runN
	}
	tr.Points = int(n)
	if since != 0 {
		tr.WaitFor = time.Duration(t0-since) * time.Millisecond
	}
	if n > 0 {
		tr.WaitEmpty = empty / n
	}
	if n < 3 {
		return tr
	}
	tr.Span = time.Duration(last-first) * time.Millisecond
	tr.WaitMean = sy / n
	if den := n*sxx - sx*sx; den > 0 {
		tr.WaitSlope = (n*sxy - sx*sy) / den
	}
	return tr
}
