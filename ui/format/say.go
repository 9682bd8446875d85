package format

import (
	"fmt"
	"strconv"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// Say spells a Text: the one place a finding's or an event's numbers
// become words, the way the tables spell them.
func Say(t diagnose.Text) string {
	if len(t.Args) == 0 {
		return t.Form
	}
	args := make([]any, len(t.Args))
	for i := range t.Args {
		args[i] = value(&t.Args[i])
	}
	return fmt.Sprintf(t.Form, args...)
}

// Value spells one Value.
func Value(v diagnose.Value) string {
	switch a := value(&v).(type) {
	case string:
		return a
	default:
		return fmt.Sprint(a)
	}
}

func value(v *diagnose.Value) any {
	switch v.Kind {
	case diagnose.KindStr:
		return v.Str
	case diagnose.KindText:
		return Say(*v.Text)
	case diagnose.KindPercent:
		return Percent(v.Num)
	case diagnose.KindSeconds:
		return Seconds(v.Num)
	case diagnose.KindQuantile:
		return Quantile(v.Num, v.Lowest, v.Highest)
	case diagnose.KindSpan:
		return Span(time.Duration(v.Num))
	case diagnose.KindDur:
		return Dur(time.Duration(v.Num))
	case diagnose.KindSI:
		return SI(v.Num)
	case diagnose.KindGrouped:
		return Grouped(v.Num)
	case diagnose.KindMem:
		return Mem(v.Num)
	case diagnose.KindDec:
		return Dec(v.Num, int(v.Prec))
	case diagnose.KindInt:
		return intArg(v.Num)
	case diagnose.KindFloat:
		return v.Num
	case diagnose.KindFixed:
		return strconv.FormatFloat(v.Num, 'f', int(v.Prec), 64)
	}
	return Missing
}

// intArg is a whole number for %d, spelled the same under %s (a flag
// value the sentence takes as a word).
type intArg int64

func (i intArg) Format(s fmt.State, verb rune) {
	if verb == 's' || verb == 'v' {
		verb = 'd'
	}
	fmt.Fprintf(s, fmt.FormatString(s, verb), int64(i))
}

// Span renders a span of time as sentences say it: 0s, 45s, 2m05s, 1h05m;
// below a second as a latency (Dur's whole milliseconds are too coarse).
func Span(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return Seconds(d.Seconds())
	}
	return Dur(d)
}
