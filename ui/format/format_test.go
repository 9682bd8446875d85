package format

import (
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vtop-dev/vtop/diagnose"
)

func TestNumbers(t *testing.T) {
	nan := math.NaN()
	cases := []struct{ got, want string }{
		{Seconds(nan), "--"},
		{Seconds(0.0004), "400µs"},
		{Seconds(0.0125), "12.5ms"},
		{Seconds(0.25), "250ms"},
		{Seconds(1.25), "1.25s"},
		{Seconds(15.6), "15.6s"},
		{Seconds(125), "2m05s"},
		// No unit's rounding prints the next unit's first value, no
		// trailing zeros: 10s, 1s, 1h, 2m (issue 10).
		{Seconds(10), "10s"},
		{Seconds(9.999), "10s"},
		{Seconds(2), "2s"},
		{Seconds(0.9996), "1s"},
		{Seconds(0.09996), "100ms"},
		{Seconds(0.00099951), "1ms"},
		{Seconds(120), "2m"},
		{Seconds(3600), "1h"},
		{Seconds(3599.7), "1h"},
		{Dur(time.Hour), "1h"},
		{Dur(2 * time.Minute), "2m"},
		{Dur(10 * time.Second), "10s"},
		{Percent(0.97), "97%"},
		{Percent(0.042), "4.2%"},
		{Percent(0), "0%"},
		{Percent(nan), "--"},
		{Rate(0), "0"},
		{Rate(0.03), "0.03"},
		{Rate(12.4), "12"},
		{Rate(1234), "1.2k"},
		{Rate(45000), "45k"},
		{Rate(1.3e6), "1.3M"},
		{Count(7), "7"},
		{Count(nan), "--"},
		{Bytes(512), "512B"},
		{Bytes(3.2 * 1024), "3.2KiB"},
		{Bytes(41 * (1 << 30)), "41GiB"},
		{Dur(850 * time.Millisecond), "850ms"},
		{Dur(250 * time.Second), "4m10s"},
		{Dur(125 * time.Minute), "2h05m"},
		{Quantile(0.285, 0.3, 7680), "≤300ms"},
		{Quantile(0.45, 0.3, 7680), "450ms"},
		{Quantile(2560, 0.001, 2560), "≥42m40s"},
		{Quantile(nan, 0.3, 60), "--"},
		{Quantile(0.2, nan, nan), "200ms"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %q, want %q", i, c.got, c.want)
		}
	}
}

func TestShort(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                   "0s",
		0:                              "0s",
		850 * time.Millisecond:         "850ms",
		12 * time.Second:               "12s",
		4*time.Minute + 59*time.Second: "4m",
		2*time.Hour + 59*time.Minute:   "2h",
		47 * time.Hour:                 "47h",
		80 * time.Hour:                 "3d",
	} {
		if got := Short(d); got != want {
			t.Errorf("Short(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestTotalOverFloat64: every formatter gives a short, sane string for any
// float64, including absurd ones a hostile target sends (le="1e300"): no
// overflow into a negative duration, no 300-digit number.
func TestTotalOverFloat64(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1e-300, -1e-300, math.SmallestNonzeroFloat64, 0.5, -0.5, -1, -125, -1e6,
		1e9, 1e12, 9.3e15, 1e18, 9.3e18, 1e19, 1e300, -1e300, math.MaxFloat64, -math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN()}
	fns := map[string]func(float64) string{
		"Seconds": Seconds, "Percent": Percent, "Rate": Rate, "SI": SI, "Count": Count, "Bytes": Bytes,
		"Quantile": func(v float64) string { return Quantile(v, 0.3, 1e300) },
		"Dur":      func(v float64) string { return Dur(diagnose.FromSeconds(v)) },
		"Short":    func(v float64) string { return Short(diagnose.FromSeconds(v)) },
	}
	for name, fn := range fns {
		for _, v := range vals {
			got := fn(v)
			if utf8.RuneCountInString(got) > 10 || got == "" {
				t.Errorf("%s(%g) = %q: not a short value", name, v, got)
			}
			if v >= 0 && strings.HasPrefix(got, "-") && got != Missing {
				t.Errorf("%s(%g) = %q: a positive value shown negative", name, v, got)
			}
		}
	}
}

// FuzzTotal: every formatter is total over float64 (short, never a
// negative rendering of a non-negative number).
func FuzzTotal(f *testing.F) {
	for _, v := range []float64{0, -1, 1e300, -1e300, math.MaxFloat64, math.SmallestNonzeroFloat64, 9.3e18, 1e-300, 125} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		for _, got := range []string{Seconds(v), Percent(v), Rate(v), SI(v), Count(v), Bytes(v), Quantile(v, 0.3, 60),
			Dur(diagnose.FromSeconds(v)), Short(diagnose.FromSeconds(v))} {
			if got == "" || utf8.RuneCountInString(got) > 10 {
				t.Fatalf("%g rendered %q", v, got)
			}
			if v >= 0 && strings.HasPrefix(got, "-") && got != Missing {
				t.Fatalf("%g rendered %q", v, got)
			}
		}
	})
}
