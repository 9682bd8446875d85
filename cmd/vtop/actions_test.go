package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A label value with ; rm -rf /, $(…) and backquotes reaches the action's
// program as one literal argument: the words are expanded one by one and
// run without a shell.
func TestActionArgumentsLiteral(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "pwned")
	hostile := "m; rm -rf / $(touch " + canary + ") `touch " + canary + "` && echo x"
	a := action{Name: "show", Key: "L", Command: []string{"printf", "[%s]", "$MODEL", "--target=$TARGET"}}
	out, err := a.command(map[string]string{"MODEL": hostile, "TARGET": "h:1"}).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "[" + hostile + "][--target=h:1]"; string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
	if _, err := os.Stat(canary); err == nil {
		t.Error("a value ran as a command")
	}
}

// The config file's actions: checked for what would make them unsafe or
// ambiguous.
func TestParseActions(t *testing.T) {
	for _, c := range []struct{ yaml, err string }{
		{"actions:\n  - {name: logs, key: L, command: [kubectl, logs, $POD]}\n", ""},
		{"actions:\n  - {name: quit, key: q, command: [true]}\n", "vtop's own"},
		{"actions:\n  - {name: x, key: L, command: [$MODEL]}\n", "cannot come from a value"},
		{"actions:\n  - {name: x, key: L, command: []}\n", "give name, key and command"},
		{"actions:\n  - {name: a, key: L, command: [true]}\n  - {name: b, key: L, command: [true]}\n", "taken by another"},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(path, []byte(c.yaml), 0o600)
		fc, err := loadFile(path, true)
		switch {
		case c.err == "" && (err != nil || len(fc.Actions) != 1 || fc.Actions[0].Command[2] != "$POD"):
			t.Errorf("%q: %v %+v", c.yaml, err, fc)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want %q", c.yaml, err, c.err)
		}
	}
}

// In the TUI the action's key hands the terminal to the command (vtop
// leaves the alternate screen) and takes it back when it exits.
func TestE2EAction(t *testing.T) {
	bin := vtopBinary(t)
	srv := movingServer(t, "llama; rm -rf / $(id)")
	tm := newTerm(t, 120, 40)
	out := filepath.Join(tm.dir, "arg")
	cfg := filepath.Join(tm.dir, "config.yaml")
	// sh is the program here, on purpose: the value arrives as $1 and is
	// only ever quoted; the read holds the terminal until Enter.
	conf := "actions:\n  - name: note\n    key: L\n    command: [sh, -c, 'printf %s \"$1\" > \"$2\"; echo ACTION-RAN; read -r x', sh, $MODEL, " + out + "]\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	tm.start(bin, "--config", cfg, "--interval", "250ms", "--gpu", "none", "--log", filepath.Join(tm.dir, "vtop.log"), srv)
	tm.waitFor(10*time.Second, "1/1 up", "Latency")
	tm.keys("L")
	tm.waitFor(5*time.Second, "ACTION-RAN")
	if got := tm.format("#{alternate_on}"); got != "0" {
		t.Errorf("the command ran on vtop's alternate screen (%s)", got)
	}
	b, err := os.ReadFile(out)
	if err != nil || string(b) != "llama; rm -rf / $(id)" {
		t.Errorf("the command got %q (%v)", b, err)
	}
	tm.keys("Enter")
	tm.waitFor(5*time.Second, "note done", "Latency")
	tm.keys("q")
	// The command's own line stays on the main screen (it had the
	// terminal): the rest of assertRestored.
	tm.waitFor(10*time.Second, "VTOP-EXIT=0", "STTY-RESTORED")
	if got := tm.format("#{alternate_on}"); got != "0" {
		t.Errorf("still on the alternate screen (%s)", got)
	}
}
