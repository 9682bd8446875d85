package diagnose

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The findings' numbers are formatted here rather than in ui/format
// (diagnose does not import ui); the forms match it: unknown is "--".

const missing = "--"

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

func pct(v float64) string {
	if bad(v) {
		return missing
	}
	p := v * 100
	if p != 0 && math.Abs(p) < 10 {
		return trimZeros(fmt.Sprintf("%.1f", p)) + "%"
	}
	return fmt.Sprintf("%.0f%%", p)
}

func secs(v float64) string {
	switch {
	case bad(v):
		return missing
	case v < 0.001:
		return fmt.Sprintf("%.0fµs", v*1e6)
	case v < 0.1:
		return trimZeros(fmt.Sprintf("%.1f", v*1e3)) + "ms"
	case v < 1:
		return fmt.Sprintf("%.0fms", v*1e3)
	case v < 10:
		return fmt.Sprintf("%.2fs", v)
	case v < 100:
		return fmt.Sprintf("%.1fs", v)
	case v < 3600:
		return fmt.Sprintf("%dm%02ds", int(v)/60, int(v)%60)
	}
	return fmt.Sprintf("%dh%02dm", int(v)/3600, int(v)%3600/60)
}

// qsecs renders a latency quantile as the report does: one at the first
// or the last finite bucket bound is only known to be at most / at least
// that bound.
func qsecs(q *Quantiles, v float64) string {
	switch {
	case bad(v):
		return missing
	case !bad(q.Lowest) && q.Lowest > 0 && v <= q.Lowest:
		return "≤" + secs(q.Lowest)
	case !bad(q.Highest) && q.Highest > 0 && v >= q.Highest:
		return "≥" + secs(q.Highest)
	}
	return secs(v)
}

// capped reports whether v sits at the last finite bucket bound: the true
// quantile may be anywhere above it.
func capped(q *Quantiles, v float64) bool {
	return !bad(v) && !bad(q.Highest) && q.Highest > 0 && v >= q.Highest
}

// dur renders a span of time: 0s, 45s, 2m, 2m05s, 1h05m. Latencies
// below a second go through secs.
func dur(d time.Duration) string {
	switch {
	case d < time.Second:
		if d <= 0 {
			return "0s"
		}
		return secs(d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
		if s == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%02ds", m, s)
	}
	return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

// num renders a count or rate compactly: 0, 0.03, 4.5, 12, 1.2k, 45k.
func num(v float64) string {
	if bad(v) {
		return missing
	}
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a < 0.1:
		return trimZeros(fmt.Sprintf("%.2f", v))
	case a < 10:
		return trimZeros(fmt.Sprintf("%.1f", v))
	case a < 1000:
		return fmt.Sprintf("%.0f", v)
	case a < 10_000:
		return trimZeros(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case a < 1e6:
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	return trimZeros(fmt.Sprintf("%.1f", v/1e6)) + "M"
}

// grouped renders an integer with thousands separators: 27,000.
func grouped(v float64) string {
	if bad(v) {
		return missing
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

func ev(name, value string, w time.Duration) Evidence {
	return Evidence{Name: name, Value: value, Window: w}
}
