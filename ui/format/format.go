// Package format spells vtop's numbers the same way in findings, the TUI and
// the headless report: unknown is always "--", never 0. It lives in the ui:
// the engine and the detector hand over numbers (evidence with units,
// sentences as diagnose.Text with their Values) and only the ui spells
// them, here.
package format

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Missing is how an unknown value is shown.
const Missing = "--"

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

// noNegZero turns -0 into 0, which would print as "-0".
func noNegZero(v float64) float64 {
	if v == 0 {
		return 0
	}
	return v
}

// Seconds renders a latency given in seconds: 850µs, 12ms, 1.25s, 2m05s,
// 3h20m, 12d. It is total over float64: a hostile bucket bound of 1e300
// renders as "1e+294d", never an overflowed integer.
func Seconds(v float64) string {
	v = noNegZero(v)
	switch {
	case bad(v):
		return Missing
	case v < 0:
		return "-" + Seconds(-v)
	// Each unit ends where rounding would print the next one's first value
	// ("1000ms" is 1s); trailing zeros go ("10s", not "10.00s").
	case v < 0.0009995:
		return fmt.Sprintf("%.0fµs", v*1e6)
	case v < 0.09995:
		return trim(fmt.Sprintf("%.1f", v*1e3)) + "ms"
	case v < 0.9995:
		return fmt.Sprintf("%.0fms", v*1e3)
	case v < 9.995:
		return trim(fmt.Sprintf("%.2f", v)) + "s"
	case v < 99.95:
		return trim(fmt.Sprintf("%.1f", v)) + "s"
	case v < 3600:
		return minSec(int(v+0.5)/60, int(v+0.5)%60)
	case v < 48*3600:
		return hourMin(int(v)/3600, int(v)%3600/60)
	case v < 1e6*86400:
		return fmt.Sprintf("%dd", int(v/86400))
	}
	return fmt.Sprintf("%.0ed", v/86400)
}

// Quantile renders a latency percentile with the resolution its buckets
// have: at or below the first finite bound it was interpolated inside that
// bucket ("≤300ms"); at the highest finite bound it fell in +Inf ("≥2560s").
func Quantile(v, lowest, highest float64) string {
	switch {
	case bad(v):
		return Missing
	case !bad(lowest) && lowest > 0 && v <= lowest:
		return "≤" + Seconds(lowest)
	case !bad(highest) && v >= highest:
		return "≥" + Seconds(highest)
	}
	return Seconds(v)
}

// Percent renders a 0..1 ratio: 97%, 4.2%, 0.3%.
func Percent(v float64) string {
	v = noNegZero(v)
	if bad(v) {
		return Missing
	}
	p := v * 100
	switch {
	case p >= 1e6: // no ratio is this large; a bound reads better than 1e+302%
		return ">999999%"
	case p <= -1e6:
		return "<-999999%"
	case p != 0 && math.Abs(p) < 10:
		return trim(fmt.Sprintf("%.1f", p)) + "%"
	}
	return fmt.Sprintf("%.0f%%", p)
}

// Rate renders a per-second rate with SI suffixes: 0, 0.03, 12.4, 1.2k, 45k, 1.3M.
func Rate(v float64) string {
	if bad(v) {
		return Missing
	}
	return SI(v)
}

// SI renders a number compactly: 0, 0.03, 4.5, 12, 1.2k, 45k, 1.3M.
func SI(v float64) string {
	if bad(v) {
		return Missing
	}
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a < 0.1:
		return trim(fmt.Sprintf("%.2f", v))
	case a < 10:
		return trim(fmt.Sprintf("%.1f", v))
	case a < 1000:
		return fmt.Sprintf("%.0f", v)
	case a < 10_000:
		return trim(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case a < 1e6:
		return fmt.Sprintf("%.0fk", v/1e3)
	case a < 1e7:
		return trim(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case a < 1e9:
		return fmt.Sprintf("%.0fM", v/1e6)
	case a < 1e12:
		return trim(fmt.Sprintf("%.1f", v/1e9)) + "G"
	case a < 1e15:
		return trim(fmt.Sprintf("%.1f", v/1e12)) + "T"
	}
	return fmt.Sprintf("%.1e", v)
}

// Count renders a gauge that counts things (requests): 0, 7, 1.2k.
func Count(v float64) string {
	v = noNegZero(v)
	if bad(v) {
		return Missing
	}
	if v == math.Trunc(v) && math.Abs(v) < 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return SI(v)
}

// Bytes renders a byte count in binary units: 512B, 3.2KiB, 41GiB.
func Bytes(v float64) string {
	v = noNegZero(v)
	if bad(v) {
		return Missing
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if math.Abs(v) >= 1024 {
		return fmt.Sprintf("%.0e%s", v, units[i])
	}
	if i == 0 || v >= 100 {
		return fmt.Sprintf("%.0f%s", v, units[i])
	}
	return trim(fmt.Sprintf("%.1f", v)) + units[i]
}

// Age renders how long ago t was, relative to now: 3s, 4m, 2h, 3d.
func Age(now, t time.Time) string {
	if t.IsZero() {
		return Missing
	}
	return Dur(now.Sub(t))
}

// Dur renders a duration coarsely: 850ms, 3s, 4m10s, 2h05m, 3d.
func Dur(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return minSec(int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return hourMin(int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// minSec: "4m10s", "2m" (no ":00" tail); hourMin likewise "2h05m", "1h".
func minSec(m, s int) string {
	if m >= 60 {
		return hourMin(m/60, m%60)
	}
	if s == 0 {
		return fmt.Sprintf("%dm", m)
	}
	return fmt.Sprintf("%dm%02ds", m, s)
}

func hourMin(h, m int) string {
	if m == 0 {
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%02dm", h, m)
}

// Short renders a duration in one unit, for narrow columns: 850ms, 12s,
// 4m, 2h, 3d (rounded down).
func Short(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// Grouped renders an integer with thousands separators: 27,000.
func Grouped(v float64) string {
	if bad(v) {
		return Missing
	}
	if math.Abs(v) >= 1e15 {
		return SI(v) // beyond int64 and beyond reading
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

// Mem renders an amount of memory as sentences say it: 512 MiB, 1.5 GiB,
// 41 GiB (Bytes is the tables' tighter form).
func Mem(v float64) string {
	if bad(v) {
		return Missing
	}
	if math.Abs(v) >= 10*(1<<30) {
		return fmt.Sprintf("%.0f GiB", v/(1<<30))
	}
	if math.Abs(v) >= 1<<30 {
		return trim(fmt.Sprintf("%.1f", v/(1<<30))) + " GiB"
	}
	return fmt.Sprintf("%.0f MiB", v/(1<<20))
}

// Dec renders a plain decimal with at most prec digits after the point.
func Dec(v float64, prec int) string {
	if bad(v) {
		return Missing
	}
	return trim(strconv.FormatFloat(v, 'f', prec, 64))
}

// Tokens renders a token count: 512, 13.6k, 458k, 1.2M.
func Tokens(v float64) string { return SI(v) }

func trim(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	return s
}
