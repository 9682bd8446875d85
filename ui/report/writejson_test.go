package report

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// WriteJSON streams list fields an element at a time; the document must be
// the one json.Encoder with SetIndent("", "  ") writes, byte for byte:
// empty and nil lists, nested objects, HTML-escaped text.
func TestWriteJSONAsEncoder(t *testing.T) {
	full := BuildJSON(gpuFrame(), "test", OK)
	full.Endpoints = []JSONEndpoint{{}, {}}
	full.Findings = []JSONFinding{{ID: "a<b>&c@x", Rule: "r", Severity: "warning", Title: "quote \" and \u2028"}}
	full.Pending = []JSONFinding{}
	full.Groups = nil
	for name, r := range map[string]JSONReport{"gpu frame": BuildJSON(gpuFrame(), "test", OK), "lists": full, "zero": {}} {
		var want, got bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&got, r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%s: WriteJSON wrote\n%s\nthe encoder\n%s", name, got.Bytes(), want.Bytes())
		}
	}
}

// appendIndent writes what json.MarshalIndent writes, for values with
// every shape the report has: empty and nested objects and lists, strings
// holding quotes, backslashes, brackets, commas, colons and escapes.
func TestAppendIndentMatchesEncodingJSON(t *testing.T) {
	type inner struct {
		A []int            `json:"a"`
		M map[string]any   `json:"m"`
		S string           `json:"s"`
		E struct{}         `json:"e"`
		P *inner           `json:"p,omitempty"`
		L []map[string]int `json:"l"`
	}
	values := []any{
		nil, 1.5, "x", []int{}, map[string]int{}, []any{[]any{}, map[string]any{}, []any{1, []int{2}}},
		inner{A: []int{1, 2}, M: map[string]any{"k": []string{`a"b`, `c\d`, "{[,:]}", "\n\t<&>", "é\u2028"}}, S: `\"`,
			P: &inner{L: []map[string]int{{}, {"z": 1}}}},
	}
	// Deeper than appendIndent's prepared indentation (16 levels), and a
	// string ending in an escaped backslash before its quote.
	var deep any = map[string]any{"k": []any{1.5, "\\", `a\"b`}}
	for range 20 {
		deep = []any{1, map[string]any{"x": deep}}
	}
	values = append(values, deep)
	for _, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, pi := range [][2]string{{"", "  "}, {"    ", "  "}, {"\t", "\t"}} {
			want, _ := json.MarshalIndent(v, pi[0], pi[1])
			if got := appendIndent(nil, b, pi[0], pi[1]); !bytes.Equal(got, want) {
				t.Errorf("%s with %q, %q:\n%s\nwant\n%s", b, pi[0], pi[1], got, want)
			}
		}
	}
}

// JSONQuantiles' own MarshalJSON writes what encoding/json writes for its
// fields without it (each Num through Num.MarshalJSON), for numbers of
// every kind a quantile row holds or could: unknown (NaN, ±Inf), zero and
// negative zero, integers, fractions, the very large and the very small.
func TestQuantilesMarshalAsFields(t *testing.T) {
	type fields JSONQuantiles // the same members, without the method
	r := rand.New(rand.NewPCG(23, 5))
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1, 1e21, 1e-7, 123456789, 0.1, -2.5,
		math.MaxFloat64, math.SmallestNonzeroFloat64}
	num := func() Num {
		switch r.IntN(3) {
		case 0:
			return Num(special[r.IntN(len(special))])
		case 1:
			return Num(r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20)))
		}
		return Num(r.IntN(100000))
	}
	for range 2000 {
		q := JSONQuantiles{num(), num(), num(), num(), num(), num(), num(), num()}
		got, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(fields(q))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%v:\n%s\nwant\n%s", q, got, want)
		}
	}
}
