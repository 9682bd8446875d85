package report

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// Evidence reaches JSON as numbers with units (unknown as null), a
// percentile with its buckets' bounds, text evidence as text; never a
// number formatted for the terminal.
func TestJSONEvidenceNumbers(t *testing.T) {
	fd := diagnose.Finding{Rule: "r", Evidence: []diagnose.Evidence{
		{Name: "KV usage", Num: 0.97, Unit: diagnose.UnitRatio},
		{Name: "queue time p95", Num: math.NaN(), Unit: diagnose.UnitSeconds, Window: time.Minute},
		{Name: "TTFT p95", Num: 2560, Unit: diagnose.UnitSeconds, Lowest: 0.3, Highest: 2560},
		{Name: "state", Num: math.NaN(), Text: diagnose.Plain("sleeping (level 1)")},
	}}
	b, err := json.Marshal(Findings([]diagnose.Finding{fd}))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"name":"KV usage","number":0.97,"unit":"ratio","window_seconds":0}`,
		`{"name":"queue time p95","number":null,"unit":"s","window_seconds":60}`,
		`{"name":"TTFT p95","number":2560,"unit":"s","window_seconds":0,"bucket_lowest":0.3,"bucket_highest":2560}`,
		`{"name":"state","text":"sleeping (level 1)","window_seconds":0}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), `"value"`) || strings.Contains(string(b), "97%") {
		t.Errorf("formatted evidence in JSON:\n%s", b)
	}
}
