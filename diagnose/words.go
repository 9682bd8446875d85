package diagnose

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose/format"
)

// The findings' numbers go through package format, as the TUI's and the
// report's do; what is below is particular to findings' text.

const missing = format.Missing

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

func pct(v float64) string { return format.Percent(v) }

func secs(v float64) string { return format.Seconds(v) }

// qsecs renders a latency quantile at its buckets' resolution ("≤300ms").
func qsecs(q *Quantiles, v float64) string { return format.Quantile(v, q.Lowest, q.Highest) }

// capped reports whether v sits at the last finite bucket bound: the true
// quantile may be anywhere above it.
func capped(q *Quantiles, v float64) bool {
	return !bad(v) && !bad(q.Highest) && q.Highest > 0 && v >= q.Highest
}

// dur renders a span of time: 0s, 45s, 2m, 2m05s, 1h05m. Latencies
// below a second go through secs.
func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return secs(d.Seconds()) // finer than format.Dur's whole milliseconds
	}
	return format.Dur(d)
}

// num renders a count or rate compactly: 0, 0.03, 4.5, 12, 1.2k, 45k.
func num(v float64) string { return format.SI(v) }

// grouped renders an integer with thousands separators: 27,000.
func grouped(v float64) string {
	if bad(v) {
		return missing
	}
	if math.Abs(v) >= 1e15 {
		return format.SI(v) // beyond int64 and beyond reading
	}
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func mib(v float64) string {
	if bad(v) {
		return missing
	}
	if math.Abs(v) >= 10*(1<<30) {
		return fmt.Sprintf("%.0f GiB", v/(1<<30))
	}
	if math.Abs(v) >= 1<<30 {
		return trimZeros(fmt.Sprintf("%.1f", v/(1<<30))) + " GiB"
	}
	return fmt.Sprintf("%.0f MiB", v/(1<<20))
}

// dec renders a plain decimal with at most prec digits after the point.
func dec(v float64, prec int) string {
	if bad(v) {
		return missing
	}
	return trimZeros(strconv.FormatFloat(v, 'f', prec, 64))
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// ev is text evidence: not one number.
func ev(name, value string, w time.Duration) Evidence {
	return Evidence{Name: name, Value: value, Num: math.NaN(), Window: w}
}

// evNum is one number with its unit; Value is the terminal's text of it.
func evNum(name string, v float64, unit string, w time.Duration) Evidence {
	return Evidence{Name: name, Value: FormatEvidence(v, unit), Num: v, Unit: unit, Window: w}
}

// evQ is a latency percentile in seconds; the text marks one that fell
// in the first or the last bucket (≤0.3s, ≥2560s).
func evQ(name string, q *Quantiles, v float64, w time.Duration) Evidence {
	return Evidence{Name: name, Value: qsecs(q, v), Num: v, Unit: "s", Window: w}
}

// FormatEvidence renders a number in its unit the way findings show it
// ("--" when unknown).
func FormatEvidence(v float64, unit string) string {
	switch unit {
	case "ratio":
		return pct(v)
	case "s":
		return secs(v)
	case "per_s":
		return num(v) + "/s"
	case "req/s", "tokens/s":
		return num(v) + " " + unit
	}
	return num(v)
}
