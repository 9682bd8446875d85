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
