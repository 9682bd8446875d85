package format

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// A Text's values are spelled as the tables spell them, each by its kind,
// inside the form's words; a form's own verbs (%d, %.2f) keep their meaning.
func TestSayEveryKind(t *testing.T) {
	nested := diagnose.Say("p95 %s", diagnose.Value{Kind: diagnose.KindSeconds, Num: 0.0123})
	for _, c := range []struct {
		t    diagnose.Text
		want string
	}{
		{diagnose.Plain("no numbers"), "no numbers"},
		{diagnose.Plain("97% of it"), "97% of it"}, // a literal % is a word, not a verb
		{diagnose.Say("%s", "x"), "x"},
		{diagnose.Say("KV %s", diagnose.Value{Kind: diagnose.KindPercent, Num: 0.972}), "KV 97%"},
		{diagnose.Say("%s", diagnose.Value{Kind: diagnose.KindSeconds, Num: 1.25}), "1.25s"},
		{diagnose.Say("%s", diagnose.Value{Kind: diagnose.KindQuantile, Num: 2560, Lowest: 0.3, Highest: 2560}), "≥42m40s"},
		{diagnose.Say("%s", diagnose.Value{Kind: diagnose.KindSpan, Num: float64(125 * time.Second)}), "2m05s"},
		{diagnose.Say("%s", diagnose.Value{Kind: diagnose.KindSpan, Num: float64(850 * time.Microsecond)}), "850µs"},
		{diagnose.Say("%s", diagnose.Value{Kind: diagnose.KindDur, Num: float64(850 * time.Microsecond)}), "0ms"},
		{diagnose.Say("%s/s", diagnose.Value{Kind: diagnose.KindSI, Num: 1234}), "1.2k/s"},
		{diagnose.Say("%s", diagnose.Value{Kind: diagnose.KindGrouped, Num: 27000}), "27,000"},
		{diagnose.Say("%s", diagnose.Value{Kind: diagnose.KindMem, Num: 1.5 * (1 << 30)}), "1.5 GiB"},
		{diagnose.Say("%s", diagnose.Value{Kind: diagnose.KindDec, Num: 1.250, Prec: 2}), "1.25"},
		{diagnose.Say("%s", diagnose.Value{Kind: diagnose.KindFixed, Num: 0.9, Prec: 2}), "0.90"},
		{diagnose.Say("%d of %d", 3, 4), "3 of 4"},
		{diagnose.Say("%s → %s", diagnose.Value{Kind: diagnose.KindInt, Num: 256}, diagnose.Value{Kind: diagnose.KindInt, Num: 88}), "256 → 88"},
		{diagnose.Say("R² %.2f", 0.987), "R² 0.99"},
		{diagnose.Say("%s", diagnose.Value{Kind: diagnose.KindPercent, Num: math.NaN()}), Missing},
		{diagnose.Say("ITL %s, then %s", nested, diagnose.Value{Kind: diagnose.KindSI, Num: 3}), "ITL p95 12.3ms, then 3"},
		{diagnose.Plain("a").Add("; %s waiting", diagnose.Value{Kind: diagnose.KindSI, Num: 31}).Cat(diagnose.Plain(", 5%")), "a; 31 waiting, 5%"},
		{diagnose.Join([]diagnose.Text{diagnose.Plain("x"), diagnose.Say("%d", 2)}, "; "), "x; 2"},
	} {
		if got := Say(c.t); got != c.want {
			t.Errorf("Say(%+v) = %q, want %q", c.t, got, c.want)
		}
	}
}

// Words are replaced in a Text's form and string values, never inside a
// number: SGLang's terms for vLLM's.
func TestSayReplaceWordsOnly(t *testing.T) {
	r := strings.NewReplacer("--max-num-seqs", "--max-running-requests", "256", "XXX")
	tx := diagnose.Say("raise --max-num-seqs %s → %s (%s)", diagnose.Value{Kind: diagnose.KindInt, Num: 256},
		diagnose.Value{Kind: diagnose.KindGrouped, Num: 1256}, "see --max-num-seqs")
	want := "raise --max-running-requests 256 → 1,256 (see --max-running-requests)"
	if got := Say(tx.Replace(r)); got != want {
		t.Errorf("replaced %q, want %q", got, want)
	}
	if got := Say(tx); !strings.HasPrefix(got, "raise --max-num-seqs") {
		t.Errorf("Replace changed the original: %q", got)
	}
}
