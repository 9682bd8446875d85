package ui

import (
	"testing"

	"github.com/vtop-dev/vtop/diagnose"
)

// One rule naming different things on different endpoints is not one
// group: binding_limit said "KV transfer binds ×3" over a replica whose
// transfers failed, one whose drafts bound and one with neither (seen on a
// sim fleet opened three minutes into its incidents).
func TestGroupsKeepTitlesApart(t *testing.T) {
	pend := func(target, title string) diagnose.Finding {
		return diagnose.Finding{Rule: "binding_limit", Title: title, Target: target, State: diagnose.FindingPending, Severity: diagnose.SevWarning}
	}
	fs := []diagnose.Finding{pend("a", "KV transfer binds"), pend("b", "Speculative decoding binds"), pend("c", "KV transfer binds")}
	p := &findingsPane{c: &common{}}
	items := p.findItems(fs, true)
	if len(items) != 2 {
		t.Fatalf("%d items, want the transfer group and the drafts alone: %+v", len(items), items)
	}
	if items[0].n != 2 || items[0].x.Title != "KV transfer binds" || len(items[0].names) != 2 || items[0].names[1] != "c" {
		t.Errorf("the transfer group: %+v", items[0])
	}
	if items[1].n != 0 || items[1].x.Title != "Speculative decoding binds" {
		t.Errorf("the drafts: %+v", items[1])
	}
}
