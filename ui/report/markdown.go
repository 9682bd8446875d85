package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/vtop-dev/vtop/diagnose"
	f "github.com/vtop-dev/vtop/ui/format"
)

// The report as Markdown, for the incident channel: what is wrong, where,
// since when, the evidence and the flags to change with their arithmetic,
// pasted as it is (y in the TUI, --once -o markdown).

// FindingMarkdown is one finding, whole, as Markdown.
func FindingMarkdown(fr *diagnose.Frame, fd *diagnose.Finding) string {
	var b strings.Builder
	writeFindingMD(&b, fr, fd, "###")
	return b.String()
}

// VerdictMarkdown is the fleet's state and every finding with its cause
// first: what y copies when no single finding is selected.
func VerdictMarkdown(fr *diagnose.Frame, st Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## vtop: %s at %s\n\n", strings.ToUpper(st.String()), fr.Time.UTC().Format("2006-01-02 15:04:05 MST"))
	fmt.Fprintf(&b, "%s\n", mdEscape(FleetLine(fr)))
	if l := VerdictLine(&fr.Fleet.Verdict, true); l != "" {
		fmt.Fprintf(&b, "\n**Assessment:** %s\n", mdEscape(l))
	}
	failing := append(append([]diagnose.Outage(nil), fr.Outages...), fr.Failing...)
	for _, o := range failing {
		fmt.Fprintf(&b, "\n**Source failing:** %s since %s: %s\n", mdEscape(o.Source), o.Since.UTC().Format("15:04:05"), mdEscape(o.Err))
	}
	listed := false
	for _, p := range fr.Problems {
		if slices.ContainsFunc(failing, func(o diagnose.Outage) bool { return strings.HasPrefix(p, o.Source+": ") }) {
			continue // said above, with since when
		}
		fmt.Fprintf(&b, "\n- problem: %s", mdEscape(p))
		listed = true
	}
	if listed {
		b.WriteByte('\n')
	}
	if len(fr.Findings) == 0 {
		b.WriteString("\nNo findings.\n")
	}
	for i := range fr.Findings {
		b.WriteByte('\n')
		writeFindingMD(&b, fr, &fr.Findings[i], "###")
	}
	if len(fr.Pending) > 0 {
		fmt.Fprintf(&b, "\n**Pending** (holding, not fired yet):\n\n")
		for i := range fr.Pending {
			fd := &fr.Pending[i]
			fmt.Fprintf(&b, "- %s on %s: holding %s of %s\n", mdEscape(fd.Title), code(FindingTarget(fd)), f.Dur(fd.HeldFor), f.Dur(fd.Hold))
		}
	}
	return b.String()
}

// WriteMarkdown is the --once report as Markdown.
func WriteMarkdown(w io.Writer, fr *diagnose.Frame, st Status) error {
	_, err := io.WriteString(w, VerdictMarkdown(fr, st))
	return err
}

func writeFindingMD(b *strings.Builder, fr *diagnose.Frame, fd *diagnose.Finding, h string) {
	sev := strings.ToUpper(fd.Severity.String())
	if fd.State == diagnose.FindingPending {
		sev = "PENDING " + sev
	}
	fmt.Fprintf(b, "%s %s: %s\n\n", h, sev, mdEscape(fd.Title))
	fmt.Fprintf(b, "- **Where:** %s\n", code(FindingTarget(fd)))
	if !fd.FirstSeen.IsZero() {
		fmt.Fprintf(b, "- **Since:** %s (%s ago)\n", fd.FirstSeen.UTC().Format("2006-01-02 15:04:05 MST"), f.Age(fr.Time, fd.FirstSeen))
	}
	if fd.Cause != "" {
		fmt.Fprintf(b, "- **Follows:** %s\n", mdEscape(fd.Cause))
	}
	if summary := f.Say(fd.Summary); summary != "" {
		fmt.Fprintf(b, "- **What:** %s\n", mdEscape(summary))
	}
	if len(fd.Evidence) > 0 {
		b.WriteString("- **Evidence:**\n")
		for _, ev := range fd.Evidence {
			win := "now"
			if ev.Window > 0 {
				win = "over " + f.Dur(ev.Window)
			}
			fmt.Fprintf(b, "  - %s: %s (%s)\n", mdEscape(ev.Name), mdEscape(EvidenceValue(ev)), win)
		}
	}
	if action := f.Say(fd.Action); action != "" {
		fmt.Fprintf(b, "- **Do:** %s\n", mdEscape(action))
	}
	for _, fc := range fd.Flags {
		fmt.Fprintf(b, "  - %s\n", code(FlagLine(fc)))
	}
	fmt.Fprintf(b, "- **Rule:** %s\n", code(fd.Rule))
}

// code is s as inline code: a backtick inside cannot end it.
func code(s string) string {
	return "`" + strings.NewReplacer("`", "'", "\n", " ").Replace(s) + "`"
}

// mdEscape keeps text from a label or an error from opening Markdown of
// its own (a link, a heading, a table) when pasted.
func mdEscape(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "`", "\\`", "*", "\\*", "_", "\\_", "[", "\\[", "]", "\\]", "<", "&lt;", ">", "&gt;", "|", "\\|", "#", "\\#", "\n", " ")
	return r.Replace(s)
}
