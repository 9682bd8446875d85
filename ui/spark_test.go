package ui

import (
	"math"
	"testing"

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
