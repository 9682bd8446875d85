package detect

import (
	"math"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/internal/format"
)

// The findings' numbers go through package format, as the TUI's and the
// report's do; what is below is particular to findings' text.

const missing = format.Missing

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

func pct(v float64) string { return format.Percent(v) }

func secs(v float64) string { return format.Seconds(v) }

// qsecs renders a latency quantile at its buckets' resolution ("≤300ms").
func qsecs(q *diagnose.Quantiles, v float64) string { return format.Quantile(v, q.Lowest, q.Highest) }

// capped reports whether v sits at the last finite bucket bound: the true
// quantile may be anywhere above it.
func capped(q *diagnose.Quantiles, v float64) bool {
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

func grouped(v float64) string { return format.Grouped(v) }

func mib(v float64) string { return format.Mem(v) }

// dec renders a plain decimal with at most prec digits after the point.
func dec(v float64, prec int) string { return format.Dec(v, prec) }

// ev is text evidence: not a number (a reason, a version, a list).
func ev(name, text string, w time.Duration) diagnose.Evidence {
	return diagnose.Evidence{Name: name, Text: text, Num: math.NaN(), Window: w}
}

// evNum is one number with its unit; the reader formats it.
func evNum(name string, v float64, unit diagnose.Unit, w time.Duration) diagnose.Evidence {
	return diagnose.Evidence{Name: name, Num: v, Unit: unit, Window: w}
}

// evQ is a latency percentile in seconds with its buckets' resolution, so
// the reader can mark one that fell in the first or the last bucket.
func evQ(name string, q *diagnose.Quantiles, v float64, w time.Duration) diagnose.Evidence {
	return diagnose.Evidence{Name: name, Num: v, Unit: diagnose.UnitSeconds, Window: w, Lowest: q.Lowest, Highest: q.Highest}
}

// say is a finding's sentence with its numbers as numbers (see diagnose.Text).
func say(form string, args ...any) diagnose.Text { return diagnose.Say(form, args...) }
