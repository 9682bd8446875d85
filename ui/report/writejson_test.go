package report

import (
	"bytes"
	"encoding/json"
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
