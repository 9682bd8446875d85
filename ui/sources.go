package ui

import (
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	f "github.com/vtop-dev/vtop/ui/format"
)

// What the sources say about themselves, on screen: the header names the
// first source that fails (Prometheus, whose failure blinds every endpoint,
// before a dcgm-exporter or a discovery rule), and the findings pane opens
// with every problem, a line each.

// failing is every failing source, the ones feeding the endpoints first.
func (c *common) failing() []diagnose.Outage {
	if c.fr == nil {
		return nil
	}
	return append(append([]diagnose.Outage(nil), c.fr.Outages...), c.fr.Failing...)
}

// failText is one failing source: which, for how long, and its error.
func (c *common) failText(o *diagnose.Outage, more int) string {
	t := symCrit + " " + o.Source + " failing"
	if !o.Since.IsZero() {
		t += " " + f.Short(max(0, c.now.Sub(o.Since)).Truncate(time.Second))
	}
	if more > 0 {
		t += " (+" + itoa(more) + ")"
	}
	if o.Err != "" {
		t += ": " + o.Err
	}
	return t
}

// outageText is the header's line for the sources that fail: the first,
// and how many more. "" when none does.
func (m *Model) outageText() string {
	fs := m.failing()
	if len(fs) == 0 {
		return ""
	}
	return m.failText(&fs[0], len(fs)-1)
}

// maxSourceLines bounds the findings pane's lines about sources: a storm
// of problems must not push every finding off the screen.
const maxSourceLines = 3

// sourceLines are the findings pane's first lines: each failing source
// with its age and error, then the other problems (a bound reached, a gap
// in the history), painted; the last line counts what did not fit.
func (c *common) sourceLines() []string {
	if c.fr == nil {
		return nil
	}
	s := c.st
	var out []string
	fs := c.failing()
	for i := range fs {
		out = append(out, s.crit.s(symCrit)+s.text.s(strings.TrimPrefix(c.failText(&fs[i], 0), symCrit)))
	}
	for _, p := range c.fr.Problems {
		if isFailing(fs, p) {
			continue // said above, with its age
		}
		out = append(out, s.warn.s(symWarn)+" "+s.text.s(p))
	}
	if len(out) > maxSourceLines {
		rest := len(out) - maxSourceLines + 1
		out = append(out[:maxSourceLines-1], s.muted.s("  +"+plural(rest, "more source problem")+" (vtop --once lists them)"))
	}
	return out
}

// isFailing reports whether problem line p ("key: text") is one of fs.
func isFailing(fs []diagnose.Outage, p string) bool {
	for i := range fs {
		if strings.HasPrefix(p, fs[i].Source+": ") {
			return true
		}
	}
	return false
}
