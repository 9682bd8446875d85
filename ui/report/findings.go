package report

import (
	"fmt"
	"strings"

	"github.com/vtop-dev/vtop/diagnose"
	f "github.com/vtop-dev/vtop/ui/format"
)

// writeFindings lists the active findings, worst first: what, where, since
// when, the evidence in a line, and what to change with the arithmetic.
func writeFindings(b *strings.Builder, fr *diagnose.Frame) {
	defer writePending(b, fr)
	if len(fr.Findings) == 0 {
		b.WriteString("\nfindings: none\n")
		return
	}
	fmt.Fprintf(b, "\nfindings (%d)\n", len(fr.Findings))
	for i := range fr.Findings {
		fd := &fr.Findings[i]
		fmt.Fprintf(b, "  %-8s %s on %s  since %s (%s)\n", strings.ToUpper(fd.Severity.String()), fd.Title,
			FindingTarget(fd), fd.FirstSeen.Format("15:04:05"), f.Age(fr.Time, fd.FirstSeen))
		fmt.Fprintf(b, "           %s\n", f.Say(fd.Summary))
		if action := f.Say(fd.Action); action != "" {
			fmt.Fprintf(b, "           → %s\n", action)
		}
		for _, fc := range fd.Flags {
			fmt.Fprintf(b, "             %s\n", FlagLine(fc))
		}
		fmt.Fprintf(b, "           [%s]\n", fd.Rule)
	}
}

// writePending lists the conditions holding toward their hold: not
// findings yet, but what the next minutes will likely bring.
func writePending(b *strings.Builder, fr *diagnose.Frame) {
	if len(fr.Pending) == 0 {
		return
	}
	fmt.Fprintf(b, "\npending (%d): holding, not yet for their hold\n", len(fr.Pending))
	for i := range fr.Pending {
		fd := &fr.Pending[i]
		fmt.Fprintf(b, "  %-8s %s on %s  holding %s of %s\n", strings.ToUpper(fd.Severity.String()), fd.Title,
			FindingTarget(fd), f.Dur(fd.HeldFor), f.Dur(fd.Hold))
		fmt.Fprintf(b, "           %s\n", f.Say(fd.Summary))
		if action := f.Say(fd.Action); action != "" {
			fmt.Fprintf(b, "           → %s\n", action)
		}
	}
}

// FindingTarget names where a finding applies: endpoint, model, engine.
func FindingTarget(fd *diagnose.Finding) string {
	s := fd.Target
	var extra []string
	if fd.Model != "" {
		extra = append(extra, fd.Model)
	}
	if fd.Engine != "" {
		extra = append(extra, "engine "+fd.Engine)
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

// FlagLine renders one flag change with its arithmetic.
func FlagLine(fc diagnose.FlagChange) string {
	var s string
	if fc.Alt {
		s = "or "
	}
	from, to := f.Value(fc.From), f.Value(fc.To)
	switch {
	case from != "" && !strings.HasPrefix(to, "cannot compute"):
		s += fmt.Sprintf("%s %s → %s", fc.Flag, from, to)
	default:
		s += fmt.Sprintf("%s %s", fc.Flag, to)
	}
	if why := f.Say(fc.Why); why != "" {
		s += ": " + why
	}
	return s
}
