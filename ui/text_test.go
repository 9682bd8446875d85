package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// Prose wraps at spaces only: a flag named in a sentence is never split at
// one of its hyphens (seen: "--kv-" / "cache-dtype fp8" in the detail view).
func TestWrapKeepsFlagsWhole(t *testing.T) {
	text := "set --max-num-seqs to 30; raise --gpu-memory-utilization 0.54 → 0.90; --kv-cache-dtype fp8 for about twice the KV blocks"
	for w := 25; w <= 80; w++ { // the longest flag is 24 cells
		lines := wrap(text, w)
		if got := strings.Join(lines, " "); got != text {
			t.Fatalf("width %d: words lost or split: %q", w, lines)
		}
		for _, l := range lines {
			if strings.HasSuffix(l, "-") {
				t.Fatalf("width %d: a line ends inside a flag: %q", w, lines)
			}
		}
	}
}

// wrapLine: no piece wider than the line, no word lost, breaks at spaces
// (a flag that fits a line is never split at its hyphens), a word wider
// than a line cut
// hard, the paint kept.
func TestWrapLine(t *testing.T) {
	lines := []string{
		"  y            copy the finding (or the verdict) as Markdown for the incident channel (OSC 52)",
		"      --max-num-batched-tokens 2048 → 8192 because the token budget binds the prefill of long prompts",
		"  " + strings.Repeat("x", 70) + " tail",
		"\x1b[31m  painted text that is long enough to wrap at twenty cells\x1b[0m and plain after it",
	}
	for _, l := range lines {
		for _, w := range []int{16, 20, 33, 80} {
			out := wrapLine(l, w)
			for _, o := range out {
				if width(o) > w {
					t.Errorf("%d: %q is %d wide", w, o, width(o))
				}
				if w >= 33 && strings.Contains(ansi.Strip(o), "--max-num-batched-tokens") != strings.Contains(ansi.Strip(l), "--max-num-batched-tokens") && strings.Contains(ansi.Strip(o), "--max") {
					t.Errorf("%d: a flag split: %q", w, o)
				}
			}
			got := strings.Join(strings.Fields(ansi.Strip(strings.Join(out, ""))), "")
			if want := strings.Join(strings.Fields(ansi.Strip(l)), ""); got != want {
				t.Errorf("%d: text changed:\n%q\n%q", w, got, want)
			}
		}
	}
	if out := wrapLine(lines[3], 20); !strings.HasPrefix(out[0], "\x1b[31m") || !strings.Contains(out[1], "\x1b[31m") {
		t.Errorf("the paint is lost: %q", out)
	}
}
