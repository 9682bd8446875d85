package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Keys tapped at a human's speed (50 ms apart) end on the last one: the
// header shows the last choice without a pending a→b for longer than a
// frame or two, never settles on an earlier one, and the findings are
// judged by it.
func TestE2ELastKeyWins(t *testing.T) {
	bin := vtopBinary(t)
	srv := movingServer(t, "llama-keys") // TTFT p95 ≈ 460 ms: over code's 200 ms only
	tm := newTerm(t, 120, 40)
	cfg := filepath.Join(tm.dir, "config.yaml")
	// slo_breach fires after a second instead of five minutes.
	if err := os.WriteFile(cfg, []byte("rules:\n  slo_breach: {for: 1s, resolve_for: 1s}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tm.start(bin, "--config", cfg, "--slo", "rag", "--interval", "250ms", "--window", "2m", "--gpu", "none",
		"--log", filepath.Join(tm.dir, "vtop.log"), srv)
	tm.waitFor(10*time.Second, "SLO rag ", "window 2m ", "1/1 up")
	tap := func(k string, n int) {
		for range n {
			tm.keys(k)
			time.Sleep(50 * time.Millisecond)
		}
	}
	// settled waits until the header shows want with no transition, then
	// checks it stays so for a while (no late request lands after it).
	settled := func(want string, wrong ...string) {
		t.Helper()
		start := time.Now()
		s := tm.waitFor(2*time.Second, want)
		for time.Since(start) < 3*time.Second {
			head := strings.SplitN(s, "\n", 2)[0]
			if strings.Contains(head, "→") {
				if time.Since(start) > time.Second {
					t.Fatalf("the header still shows a transition %s after the keys:\n%s", time.Since(start), head)
				}
			} else if !strings.Contains(head, want) {
				t.Fatalf("the header left %q:\n%s", want, head)
			}
			for _, w := range wrong {
				if strings.Contains(head, w) {
					t.Fatalf("the header shows %q, not the last key's choice:\n%s", w, head)
				}
			}
			time.Sleep(100 * time.Millisecond)
			s = tm.screen()
		}
	}
	tap("o", 3) // rag → agent → chat → code
	settled("SLO code ", "SLO agent", "SLO chat")
	s := tm.waitFor(10*time.Second, "SLO breach", "> 200ms (code profile)")
	for _, other := range []string{"(rag profile)", "(agent profile)", "(chat profile)"} {
		if strings.Contains(s, other) {
			t.Errorf("a finding judged by another profile: %q\n%s", other, s)
		}
	}
	tap("-", 3) // 2m → 1m → 30s → 15s
	settled("window 15s ", "window 1m ", "window 30s ")
	tm.keys("q")
	tm.assertRestored("0")
}

// The mouse in a real terminal: raw SGR mouse reports (what a terminal
// sends for a click) select a row, and a second click opens it.
func TestE2EMouse(t *testing.T) {
	bin := vtopBinary(t)
	a, b := movingServer(t, "llama-mouse-a"), movingServer(t, "llama-mouse-b")
	tm := newTerm(t, 120, 40)
	tm.start(bin, "--interval", "250ms", "--gpu", "none", "--log", filepath.Join(tm.dir, "vtop.log"), a, b)
	s := tm.waitFor(10*time.Second, "2/2 up", "run/wait")
	// The second table row: header, summary and column titles above it.
	lines := strings.Split(s, "\n")
	row := -1
	for i, l := range lines {
		if strings.Contains(l, "llama-mouse") {
			row = i // the last row with a model
		}
	}
	if row < 0 {
		t.Fatalf("no table row:\n%s", s)
	}
	name := strings.Fields(lines[row])[0]
	click := func() {
		// SGR: button 0 pressed at column 10, line row+1 (1-based), released.
		tm.tmux("send-keys", "-l", fmt.Sprintf("\x1b[<0;10;%dM\x1b[<0;10;%dm", row+1, row+1))
	}
	click()
	tm.waitFor(5*time.Second, "› ")
	click()
	tm.waitFor(5*time.Second, "Latency", "Throughput", name+" · ")
	tm.keys("q")
	tm.assertRestored("0")
}
