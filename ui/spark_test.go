package ui

import (
	"math"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

func points(vs ...float64) []diagnose.SparkPoint {
	pts := make([]diagnose.SparkPoint, len(vs))
	for i, v := range vs {
		pts[i].V[diagnose.SpKV] = float32(v)
	}
	return pts
}

func TestSparkline(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name string
		vals []float64
		w    int
		sc   sparkScale
		want string
	}{
		{"fixed ratio", []float64{0, 0.25, 0.5, 0.75, 1}, 5, ratioScale, "▁▂▄▆█"},
		{"a gap is not a zero", []float64{0, nan, 0.01}, 3, ratioScale, "▁ ▁"},
		{"short history pads left", []float64{1}, 4, ratioScale, "   █"},
		{"newest kept when narrow", []float64{1, 1, 0, 0}, 2, ratioScale, "▁▁"},
		{"auto scale: largest is full", []float64{2, 4, 8}, 3, autoScale, "▂▄█"},
		{"floor keeps a calm series low", []float64{0.05, 0.05}, 2, sparkScale{floor: 0.8}, "▁▁"},
		{"above a fixed top is clamped", []float64{3}, 1, ratioScale, "█"},
		{"negative is the floor", []float64{-1}, 1, ratioScale, "▁"},
		{"all unknown", []float64{nan, nan}, 3, autoScale, "   "},
		{"no width", []float64{1}, 0, autoScale, ""},
	}
	for _, c := range cases {
		if got := newSparkPad().sparkline(points(c.vals...), diagnose.SpKV, c.w, c.sc); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestSparkRows(t *testing.T) {
	got := newSparkPad().rows(points(0, 0.5, 1, math.NaN()), diagnose.SpKV, 4, 2, ratioScale)
	want := []string{"  █ ", "▁██ "}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("%q, want %q", got, want)
	}
	for _, r := range got {
		if width(r) != 4 {
			t.Errorf("row %q is %d wide", r, width(r))
		}
	}
}

func TestBar(t *testing.T) {
	cases := []struct {
		v           float64
		w           int
		fill, empty string
	}{
		{0, 4, "", "░░░░"},
		{1, 4, "████", ""},
		{0.5, 4, "██", "░░"},
		{0.95, 10, "█████████▌", ""},
		{0.004, 10, "", "░░░░░░░░░░"},
		{0.01, 10, "▏", "░░░░░░░░░"},
		{0.02, 10, "▎", "░░░░░░░░░"},
		{1.7, 3, "███", ""},
		{math.NaN(), 3, "", "···"},
	}
	for _, c := range cases {
		f, e := bar(c.v, c.w)
		if f != c.fill || e != c.empty {
			t.Errorf("bar(%v, %d) = %q %q, want %q %q", c.v, c.w, f, e, c.fill, c.empty)
		}
		if c.w > 0 && width(f+e) != c.w {
			t.Errorf("bar(%v, %d) is %d wide", c.v, c.w, width(f+e))
		}
	}
}

// A percentile inside a histogram bucket twice as wide as its start or
// more is marked approximate; the first bucket and +Inf have their own marks.
func TestWideBucket(t *testing.T) {
	q := quantiles(0.1)
	for v, want := range map[float64]bool{
		0.3: true, 0.6: false, 100: true, 1.5: true, 6: false, 0.0005: false, 3000: false, nan: false,
	} {
		if _, _, got := wideBucket(&q, v); got != want {
			t.Errorf("%v: %v", v, got)
		}
	}
	if s, _ := latencyCell(q, 100, 0, 1); s != "~1m40s " {
		t.Errorf("cell %q", s)
	}
	if s, _ := latencyCell(q, 0.6, 0, 1); s != "600ms " {
		t.Errorf("cell %q", s)
	}
}

// A sparkline covers up to half an hour: the polls while they fill it,
// else equal-time columns of the largest values, from the long history
// where the polls no longer reach; no column is left empty by it.
func TestHistoryAt(t *testing.T) {
	point := func(at time.Duration, v float32) diagnose.SparkPoint {
		p := diagnose.SparkPoint{UnixMilli: t0.Add(at).UnixMilli()}
		for k := range p.V {
			p.V[k] = float32(nan)
		}
		p.V[diagnose.SpTTFT] = v
		return p
	}
	var fine, long []diagnose.SparkPoint
	for i := 0; i < 240; i++ {
		fine = append(fine, point(time.Duration(i-239)*time.Second, 0.1))
	}
	if got := (history{fine: fine[:30]}).at(60); len(got) != 30 {
		t.Errorf("short history: %d points", len(got))
	}
	if got := (history{fine: fine}).at(200); len(got) != 240 {
		t.Errorf("polls that fill the line are drawn as they are: %d", len(got))
	}
	for i := 0; i < 180; i++ {
		v := float32(0.1)
		if i == 20 {
			v = 5 // 26 minutes ago
		}
		long = append(long, point(time.Duration(i-179)*10*time.Second, v))
	}
	for _, w := range []int{24, 60, 100} {
		got := (history{fine, long}).at(w)
		if len(got) != w {
			t.Fatalf("w %d: %d columns", w, len(got))
		}
		span := time.Duration(got[w-1].UnixMilli-got[0].UnixMilli) * time.Millisecond
		if span < 28*time.Minute {
			t.Errorf("w %d spans %v", w, span)
		}
		spike := false
		for c, p := range got {
			if math.IsNaN(float64(p.V[diagnose.SpTTFT])) {
				t.Errorf("w %d: column %d empty", w, c)
			}
			spike = spike || p.V[diagnose.SpTTFT] == 5
		}
		if !spike {
			t.Errorf("w %d: the spike 26 minutes ago is lost", w)
		}
	}
}
