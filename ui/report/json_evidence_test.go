package report

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/vtop-dev/vtop/diagnose"
)

// Evidence that is one number reaches JSON as the number with its unit
// (unknown as null); text evidence stays text only.
func TestJSONEvidenceNumbers(t *testing.T) {
	fd := diagnose.Finding{Rule: "r", Evidence: []diagnose.Evidence{
		{Name: "KV usage", Value: "97%", Num: 0.97, Unit: "ratio"},
		{Name: "queue time p95", Value: "--", Num: math.NaN(), Unit: "s"},
		{Name: "KV capacity", Value: "27,000 blocks × 16 tokens", Num: math.NaN()},
	}}
	b, err := json.Marshal(Findings([]diagnose.Finding{fd}))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"name":"KV usage","value":"97%","number":0.97,"unit":"ratio","window_seconds":0}`,
		`{"name":"queue time p95","value":"--","number":null,"unit":"s","window_seconds":0}`,
		`{"name":"KV capacity","value":"27,000 blocks × 16 tokens","window_seconds":0}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("lacks %s:\n%s", want, b)
		}
	}
}
