package ui

import (
	"strings"
	"testing"
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
