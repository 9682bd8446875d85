package report

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// Text from labels and errors is pasted as text: a model name or an error
// cannot open a link, a heading or a table, or end inline code.
func TestMarkdownEscapesHostileText(t *testing.T) {
	now := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	fd := &diagnose.Finding{Rule: "endpoint_down", Title: "Endpoint down", Target: "host`:8000", Model: "[x](http://evil)",
		Severity: diagnose.SevCritical, FirstSeen: now.Add(-2 * time.Minute), Summary: diagnose.Plain("# heading | cell <b>"),
		Evidence: []diagnose.Evidence{{Name: "last error", Text: diagnose.Plain("*boom*"), Unit: diagnose.UnitText}}}
	md := FindingMarkdown(&diagnose.Frame{Time: now}, fd)
	for _, bad := range []string{"\n# ", "<b>", " *boom*", "host`:"} {
		if strings.Contains(md, bad) {
			t.Errorf("unescaped %q:\n%s", bad, md)
		}
	}
	for _, want := range []string{"### CRITICAL: Endpoint down", "- **Since:** 2026-11-26 02:58:00 UTC (2m ago)", "\\*boom\\*", "\\# heading \\| cell &lt;b&gt;",
		"`host':8000 ([x](http://evil))`"} { // inside inline code a link is text
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
}

// The verdict handed on names each failing source (a dcgm-exporter, a
// file_sd rule) with since when, once, and the other problems after.
func TestMarkdownFailingSources(t *testing.T) {
	now := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	fr := &diagnose.Frame{Time: now,
		Failing:  []diagnose.Outage{{Source: "dcgm-exporter 10.0.0.9:9400", Err: "connection refused", Since: now.Add(-time.Minute)}},
		Problems: []string{"dcgm-exporter 10.0.0.9:9400: connection refused", "discovery: 12000 targets found"}}
	md := VerdictMarkdown(fr, Unknown)
	for _, want := range []string{"**Source failing:** dcgm-exporter 10.0.0.9:9400 since 02:59:00: connection refused", "- problem: discovery: 12000 targets found"} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if strings.Count(md, "connection refused") != 1 {
		t.Errorf("the failing source is said twice:\n%s", md)
	}
}
