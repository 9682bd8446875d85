package diagnose

import (
	"fmt"
	"slices"
	"strings"
)

// Text is a sentence whose numbers are still numbers: the detector and the
// timeline say what they found with a fmt form and its values, and the ui
// spells the values (ui/format's Say), so the spelling of a number lives in
// one layer and diagnose imports no formatting. Form has one verb per Arg:
// %s for a spelled value, %d for KindInt, a float verb (%.2f) for
// KindFloat; a literal % in Form is written %%.
type Text struct {
	Form string
	Args []Value
}

// ValueKind says how a Value is spelled.
type ValueKind uint8

const (
	KindStr      ValueKind = iota // Str as it is (a name, a reason, a flag)
	KindText                      // a nested Text
	KindPercent                   // a 0..1 ratio: 97%, 4.2%
	KindSeconds                   // a latency in seconds: 12ms, 1.25s
	KindQuantile                  // a latency percentile at its buckets' resolution: ≤300ms, ≥2560s
	KindSpan                      // a span of time, Num in nanoseconds: 45s, 2m05s, below 1s as a latency
	KindDur                       // a span of time, Num in nanoseconds, coarsely: 850ms, 3s, 4m10s
	KindSI                        // a count or rate, compact: 0.03, 12, 1.2k
	KindGrouped                   // an integer with thousands separators: 27,000
	KindMem                       // bytes as a sentence says them: 512 MiB, 41 GiB
	KindDec                       // a decimal with at most Prec digits after the point
	KindInt                       // an integer for a %d verb
	KindFloat                     // a float for the form's own float verb (%.2f)
	KindFixed                     // a decimal with exactly Prec digits after the point, as a flag is written: 0.90
)

// Value is one argument of a Text.
type Value struct {
	Num  float64
	Kind ValueKind
	Prec uint8 // KindDec, KindFixed (a byte: a Value is 56 bytes, not 64)
	// Lowest and Highest: a KindQuantile's first and last finite bucket
	// bounds.
	Lowest, Highest float64
	Text            *Text  // KindText
	Str             string // KindStr
}

// Str is a Value spelled as it is.
func Str(s string) Value { return Value{Kind: KindStr, Str: s} }

// Plain is a Text without numbers.
func Plain(s string) Text {
	if !strings.Contains(s, "%") {
		return Text{Form: s}
	}
	return Text{Form: "%s", Args: []Value{Str(s)}}
}

// Say builds a Text from a fmt form and its values, with Sprintf's
// meaning for plain Go values: a Value as it is, a string as KindStr, a
// Text nested, an integer for %d, a float64 for the form's own float verb
// (%.2f); anything else as fmt prints it.
func Say(form string, args ...any) Text {
	t := Text{Form: form}
	if len(args) > 0 {
		t.Args = make([]Value, len(args))
		for i, a := range args {
			t.Args[i] = ValueOf(a)
		}
	}
	return t
}

// ValueOf is a Value for one of Say's arguments.
func ValueOf(a any) Value {
	switch a := a.(type) {
	case Value:
		return a
	case string:
		return Str(a)
	case Text:
		return Value{Kind: KindText, Text: &a}
	case int:
		return Value{Kind: KindInt, Num: float64(a)}
	case int64:
		return Value{Kind: KindInt, Num: float64(a)}
	case float64:
		return Value{Kind: KindFloat, Num: a}
	}
	return Str(fmt.Sprint(a))
}

// IsZero says the Value is the zero Value (an empty string).
func (v Value) IsZero() bool { return v == Value{} }

// Numeric says the Value is a number (Num holds it).
func (v Value) Numeric() bool { return v.Kind != KindStr && v.Kind != KindText }

// Replace applies r to a string or a Text, never to a number.
func (v Value) Replace(r *strings.Replacer) Value {
	switch v.Kind {
	case KindStr:
		v.Str = r.Replace(v.Str)
	case KindText:
		n := v.Text.Replace(r)
		v.Text = &n
	}
	return v
}

// IsZero says the Text says nothing.
func (t Text) IsZero() bool { return t.Form == "" && len(t.Args) == 0 }

// Cat is t followed by u.
func (t Text) Cat(u ...Text) Text {
	return catTexts(len(u)+1, func(i int) Text {
		if i == 0 {
			return t
		}
		return u[i-1]
	})
}

// Add is t followed by a sentence in Say's terms.
func (t Text) Add(form string, args ...any) Text { return t.Cat(Say(form, args...)) }

// Join is parts with sep between them.
func Join(parts []Text, sep string) Text {
	if len(parts) == 0 {
		return Text{}
	}
	// From the zero Text, as parts were appended to it: a first part's
	// empty values are not kept.
	s := Plain(sep)
	return catTexts(2*len(parts), func(i int) Text {
		switch {
		case i == 0:
			return Text{}
		case i%2 == 0:
			return s
		}
		return parts[i/2]
	})
}

// catTexts is the n texts at(0)...at(n-1) one after another, their forms
// and their values each in one allocation: the detector builds its
// sentences from parts on every evaluation, and appending part by part
// was a tenth of a 1,000-endpoint fleet's allocations (BENCHMARKS.md,
// issue 23). The first text's values are shared when no other text has
// any, as appending to their clipped slice would.
func catTexts(n int, at func(int) Text) Text {
	forms, args, nonEmpty := 0, 0, 0
	var form string
	for i := range n {
		x := at(i)
		forms += len(x.Form)
		args += len(x.Args)
		if x.Form != "" {
			nonEmpty++
			form = x.Form
		}
	}
	first := at(0)
	out := Text{Form: form, Args: slices.Clip(first.Args)}
	if nonEmpty > 1 {
		var b strings.Builder
		b.Grow(forms)
		for i := range n {
			b.WriteString(at(i).Form)
		}
		out.Form = b.String()
	}
	if args > len(first.Args) {
		out.Args = make([]Value, 0, args)
		for i := range n {
			out.Args = append(out.Args, at(i).Args...)
		}
	}
	return out
}

// Replace applies r to the words of t (its form and its string values),
// never to its numbers: the form's verbs hold no words r replaces.
func (t Text) Replace(r *strings.Replacer) Text {
	out := Text{Form: r.Replace(t.Form)}
	if len(t.Args) > 0 {
		out.Args = make([]Value, len(t.Args))
		for i, a := range t.Args {
			out.Args[i] = a.Replace(r)
		}
	}
	return out
}
