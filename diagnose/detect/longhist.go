package detect

import (
	"math"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// longStep and longKeep shape the per-endpoint history the slow rules read
// (memory_leak looks at tens of minutes; the engine's rings hold one window).
const (
	longStep = 20 * time.Second
	longKeep = 64 * time.Minute
	longCap  = int(longKeep/longStep) + 2
)

// longPoint is one downsampled reading of an endpoint.
type longPoint struct {
	t      time.Time
	rss    float64 // API-server resident memory, bytes
	gpuMem float64 // GPU memory held by the endpoint's processes, bytes
	req    float64 // finished requests/s over the window
	gen    float64 // generated tokens/s over the window
}

// longHistory is a bounded ring of longPoints, oldest first.
type longHistory struct {
	pts []longPoint
}

func (h *longHistory) reset() { h.pts = h.pts[:0] }

func (h *longHistory) observe(ep *diagnose.EndpointView, now time.Time) {
	if n := len(h.pts); n > 0 && now.Sub(h.pts[n-1].t) < longStep {
		return
	}
	p := longPoint{t: now, rss: ep.RSS, gpuMem: ep.GPU.MemBytes, req: ep.Stats.ReqRate, gen: ep.Stats.GenTokRate}
	if len(ep.GPU.GPUs) == 0 || ep.GPU.Stale {
		p.gpuMem = math.NaN()
	}
	if len(h.pts) >= longCap || (len(h.pts) > 0 && now.Sub(h.pts[0].t) > longKeep) {
		copy(h.pts, h.pts[1:])
		h.pts = h.pts[:len(h.pts)-1]
	}
	h.pts = append(h.pts, p)
}

// window returns the points within w of now.
func (h *longHistory) window(now time.Time, w time.Duration) []longPoint {
	from := now.Add(-w)
	for i, p := range h.pts {
		if !p.t.Before(from) {
			return h.pts[i:]
		}
	}
	return nil
}

// Fit is a least-squares line through (seconds, value) points.
type Fit struct {
	N      int
	Span   time.Duration
	Slope  float64 // value per second
	R2     float64 // coefficient of determination, 0..1 (NaN: flat data)
	First  float64 // the fitted value at the first point
	Last   float64 // the fitted value at the last point
	RawMin float64
	RawMax float64
}

// fitLine fits value(t) over pts; points where value is NaN are skipped.
func fitLine(pts []longPoint, value func(*longPoint) float64) Fit {
	f := Fit{Slope: math.NaN(), R2: math.NaN(), First: math.NaN(), Last: math.NaN(), RawMin: math.NaN(), RawMax: math.NaN()}
	var n, sx, sy, sxx, sxy, syy float64
	var t0, tFirst, tLast time.Time
	for i := range pts {
		v := value(&pts[i])
		if math.IsNaN(v) {
			continue
		}
		if t0.IsZero() {
			t0, tFirst = pts[i].t, pts[i].t
		}
		tLast = pts[i].t
		x := pts[i].t.Sub(t0).Seconds()
		n++
		sx += x
		sy += v
		sxx += x * x
		sxy += x * v
		syy += v * v
		f.RawMin, f.RawMax = diagnose.NaNMin(f.RawMin, v), diagnose.NaNMax(f.RawMax, v)
	}
	f.N = int(n)
	if n < 3 {
		return f
	}
	f.Span = tLast.Sub(tFirst)
	den := n*sxx - sx*sx
	if den <= 0 {
		return f
	}
	f.Slope = (n*sxy - sx*sy) / den
	icpt := (sy - f.Slope*sx) / n
	f.First = icpt
	f.Last = icpt + f.Slope*f.Span.Seconds()
	vy := n*syy - sy*sy
	if vy > 0 {
		r := (n*sxy - sx*sy) / math.Sqrt(den*vy)
		f.R2 = r * r
	}
	return f
}

// thirds returns the mean of value over the first and the last third of pts.
func thirds(pts []longPoint, value func(*longPoint) float64) (early, late float64) {
	n := len(pts)
	if n < 3 {
		return math.NaN(), math.NaN()
	}
	k := n / 3
	mean := func(ps []longPoint) float64 {
		s, c := 0.0, 0.0
		for i := range ps {
			if v := value(&ps[i]); !math.IsNaN(v) {
				s += v
				c++
			}
		}
		if c == 0 {
			return math.NaN()
		}
		return s / c
	}
	return mean(pts[:k]), mean(pts[n-k:])
}

// downHistory remembers when an endpoint's outages began, for flapping.
type downHistory struct {
	starts  []time.Time // oldest first, bounded
	wasDown bool
}

const maxDownStarts = 32

func isDown(s diagnose.State) bool { return s == diagnose.StateDown || s == diagnose.StateStale }

func (h *downHistory) observe(ep *diagnose.EndpointView, now time.Time) {
	down := isDown(ep.State)
	if down && !h.wasDown {
		start := ep.Since
		if start.IsZero() || start.After(now) {
			start = now
		}
		if len(h.starts) >= maxDownStarts {
			copy(h.starts, h.starts[1:])
			h.starts = h.starts[:len(h.starts)-1]
		}
		h.starts = append(h.starts, start)
	}
	if ep.State != diagnose.StatePending {
		h.wasDown = down
	}
}

// recent returns how many outages began within w of now and when the
// first of them began.
func (h *downHistory) recent(now time.Time, w time.Duration) (int, time.Time) {
	from := now.Add(-w)
	for i, t := range h.starts {
		if !t.Before(from) {
			return len(h.starts) - i, t
		}
	}
	return 0, time.Time{}
}
