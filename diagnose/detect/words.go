package detect

import (
	"math"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// A finding's words are built here and its numbers stay numbers: the
// helpers below say how each is spelled (a diagnose.Value), and the ui
// spells them (ui's format.Say), as it spells the evidence.

// missing is how an unknown value reads inside a word list.
const missing = "--"

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

func pct(v float64) diagnose.Value { return diagnose.Value{Kind: diagnose.KindPercent, Num: v} }

func secs(v float64) diagnose.Value { return diagnose.Value{Kind: diagnose.KindSeconds, Num: v} }

// qsecs is a latency quantile at its buckets' resolution ("≤300ms").
func qsecs(q *diagnose.Quantiles, v float64) diagnose.Value {
	return diagnose.Value{Kind: diagnose.KindQuantile, Num: v, Lowest: q.Lowest, Highest: q.Highest}
}

// capped reports whether v sits at the last finite bucket bound: the true
// quantile may be anywhere above it.
func capped(q *diagnose.Quantiles, v float64) bool {
	return !bad(v) && !bad(q.Highest) && q.Highest > 0 && v >= q.Highest
}

// dur is a span of time: 0s, 45s, 2m, 2m05s, 1h05m; below a second as a
// latency.
func dur(d time.Duration) diagnose.Value {
	return diagnose.Value{Kind: diagnose.KindSpan, Num: float64(d)}
}

// num is a count or rate, compact: 0, 0.03, 4.5, 12, 1.2k, 45k.
func num(v float64) diagnose.Value { return diagnose.Value{Kind: diagnose.KindSI, Num: v} }

func grouped(v float64) diagnose.Value { return diagnose.Value{Kind: diagnose.KindGrouped, Num: v} }

func mib(v float64) diagnose.Value { return diagnose.Value{Kind: diagnose.KindMem, Num: v} }

// dec is a plain decimal with at most prec digits after the point.
func dec(v float64, prec int) diagnose.Value {
	return diagnose.Value{Kind: diagnose.KindDec, Num: v, Prec: uint8(prec)}
}

// intv is a whole number as a flag takes it: 256.
func intv(n int) diagnose.Value { return diagnose.Value{Kind: diagnose.KindInt, Num: float64(n)} }

// asInt is a flag value that is a whole number (intv).
func asInt(v diagnose.Value) (int, bool) { return int(v.Num), v.Kind == diagnose.KindInt }

// words is a Value that is a sentence.
func words(t diagnose.Text) diagnose.Value { return diagnose.Value{Kind: diagnose.KindText, Text: &t} }

// plain is a sentence without numbers.
func plain(s string) diagnose.Text { return diagnose.Plain(s) }

// ev is text evidence: not a number (a reason, a version, a list).
func ev(name, text string, w time.Duration) diagnose.Evidence {
	return evText(name, plain(text), w)
}

// evText is text evidence that holds numbers (a list of readings).
func evText(name string, text diagnose.Text, w time.Duration) diagnose.Evidence {
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
