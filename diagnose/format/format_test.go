package format

import (
	"math"
	"testing"
	"time"
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
		{Truncate("abcdef", 4), "abc…"},
		{PadRight("ab", 4), "ab  "},
		{PadLeft("ab", 4), "  ab"},
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
