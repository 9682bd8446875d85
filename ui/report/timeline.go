package report

import (
	"fmt"
	"strings"

	"github.com/vtop-dev/vtop/diagnose"
	f "github.com/vtop-dev/vtop/ui/format"
)

// TimelineLine is one event as the report and the TUI print it:
// "14:02:01  replica-3  workload  prompt tokens/s 3.6k/s → 16k/s (×4.4)".
func TimelineLine(e diagnose.Event, withTarget bool) string {
	what := e.Kind.String()
	if e.Kind == diagnose.EventFiring || e.Kind == diagnose.EventResolving {
		what += " " + e.Severity.String()
	}
	s := e.Time.UTC().Format("15:04:05") + "  "
	if withTarget {
		s += e.Target + "  "
	}
	return s + fmt.Sprintf("%-9s %s", what, f.Say(e.Text))
}

// writeTimeline lists what changed and when across the fleet.
func writeTimeline(b *strings.Builder, fr *diagnose.Frame) {
	evs := diagnose.Timeline(fr, "")
	if len(evs) == 0 {
		return
	}
	fmt.Fprintf(b, "\ntimeline (%d): what changed and when\n", len(evs))
	for _, e := range evs {
		b.WriteString("  " + TimelineLine(e, true) + "\n")
	}
}
