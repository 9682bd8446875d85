package detect

import (
	"testing"

	"github.com/vtop-dev/vtop/diagnose"
)

// A LoRA limit one scrape proved stays named through a scrape that proves
// nothing while the window is short (an adapter just swapped in), and
// gives way to any verdict the window can judge.
func TestOneScrapeLimitKept(t *testing.T) {
	d := &Detector{oneScrape: map[string]diagnose.Verdict{}}
	ep := &diagnose.EndpointView{Name: "r"}
	lora := diagnose.Verdict{Limit: diagnose.LimitLoRASlots, Signals: 3, Of: 4}
	few := diagnose.Verdict{Limit: diagnose.LimitFewData}
	for i, c := range []struct {
		points int
		in     diagnose.Verdict
		want   diagnose.Limit
	}{
		{1, lora, diagnose.LimitLoRASlots},
		{4, few, diagnose.LimitLoRASlots}, // the flicker: kept
		{5, lora, diagnose.LimitLoRASlots},
		{10, diagnose.Verdict{Limit: diagnose.LimitBurst}, diagnose.LimitBurst},
		{11, few, diagnose.LimitFewData}, // released once the window judged
	} {
		ep.Trend.Points = c.points
		if got := d.keepOneScrape(ep, c.in); got.Limit != c.want {
			t.Errorf("%d: %s at %d points, want %s", i, got.Limit, c.points, c.want)
		}
	}
}
