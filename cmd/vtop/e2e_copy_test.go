package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// y in the built binary writes the finding as Markdown in an OSC 52
// sequence: tmux (set-clipboard on) turns it into a paste buffer, as it
// would pass it on to the terminal over SSH.
func TestE2ECopyOSC52(t *testing.T) {
	bin := vtopBinary(t)
	srv := movingServer(t, "llama-copy") // TTFT p95 ≈ 460 ms: over code's 200 ms
	tm := newTerm(t, 120, 40)
	tm.tmux("set-option", "-g", "set-clipboard", "on")
	cfg := filepath.Join(tm.dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("rules:\n  slo_breach: {for: 1s, resolve_for: 1s}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tm.start(bin, "--config", cfg, "--slo", "code", "--interval", "250ms", "--gpu", "none",
		"--log", filepath.Join(tm.dir, "vtop.log"), srv)
	tm.waitFor(15*time.Second, "SLO breach", "(code profile)")
	tm.keys("Tab") // the findings pane
	tm.keys("y")
	tm.waitFor(5*time.Second, `copied "SLO breach" as Markdown`)
	var buf string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if b, err := tmuxBuffer(tm); err == nil && strings.Contains(b, "SLO breach") {
			buf = b
			break
		}
	}
	for _, want := range []string{"CRITICAL: SLO breach", "- **Where:** `" + srv, "- **Evidence:**", "- **Rule:** `slo_breach`"} {
		if !strings.Contains(buf, want) {
			t.Errorf("the clipboard (tmux buffer) lacks %q:\n%s", want, buf)
		}
	}
	tm.keys("q")
	tm.assertRestored("0")
}

// tmuxBuffer is the newest paste buffer; an error while there is none.
func tmuxBuffer(tm *term) (string, error) {
	out, err := exec.Command("tmux", "-L", tm.sock, "show-buffer").Output()
	return string(out), err
}

// --once -o markdown prints the same Markdown for the incident channel.
func TestOnceMarkdown(t *testing.T) {
	code, out, errOut := runArgs(t, nil, "--once", "-o", "markdown", "-w", "1500ms", "-i", "100ms", "--gpu", "none", thrashServer(t))
	if code != 2 || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, want := range []string{"## vtop: CRITICAL at ", "### CRITICAL: KV cache thrashing", "- **Do:**", "--max-num-seqs", "- **Rule:** `kv_cache_thrashing`"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}
