package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

type idle struct{}

func (idle) Init() tea.Cmd                       { return nil }
func (idle) Update(tea.Msg) (tea.Model, tea.Cmd) { return idle{}, nil }
func (idle) View() string                        { return "running" }

// A panic in the hub's goroutine kills the program (which restores the
// terminal) and comes back as text to print once the terminal is back.
func TestGuardKillsProgramOnPanic(t *testing.T) {
	var out bytes.Buffer
	p := tea.NewProgram(idle{}, tea.WithInput(nil), tea.WithOutput(&out), tea.WithoutSignalHandler())
	done := make(chan error, 1)
	go func() {
		_, err := p.Run()
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	msg := guard(func() { panic("hub exploded") }, p.Kill)
	select {
	case err := <-done:
		if !errors.Is(err, tea.ErrProgramKilled) {
			t.Errorf("program ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the program kept running after the hub panicked")
	}
	if !strings.HasPrefix(msg, "hub exploded\n") || !strings.Contains(msg, "goroutine") {
		t.Errorf("panic text %q", msg)
	}
	if msg := guard(func() {}, func() { t.Error("kill without a panic") }); msg != "" {
		t.Errorf("no panic: %q", msg)
	}
}

// The theme: flag > VTOP_THEME > config file > default; NO_COLOR turns the
// default into mono but not a theme someone asked for; TERM=dumb always
// gets mono. Bad themes and SLO profiles are refused at startup.
func TestThemeResolution(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("theme: light\nslo: rag\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			if k == "XDG_CONFIG_HOME" {
				return dir + "/none"
			}
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	cases := []struct {
		args  []string
		env   func(string) string
		theme string
	}{
		{nil, env(), "dark"},
		{[]string{"--theme", "hc"}, env(), "high-contrast"},
		{nil, env("NO_COLOR", "1"), "mono"},
		{[]string{"--theme", "dark"}, env("NO_COLOR", "1"), "dark"},
		{nil, env("NO_COLOR", "1", "VTOP_THEME", "light"), "light"},
		{[]string{"--config", cfg}, env("NO_COLOR", "1"), "light"},
		{[]string{"--theme", "dark"}, env("TERM", "dumb"), "mono"},
		{[]string{"--theme", "light"}, env("VTOP_THEME", "dark"), "light"},
	}
	for _, c := range cases {
		o, _, err := resolve(c.args, c.env)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if o.theme != c.theme {
			t.Errorf("%v: theme %q, want %q", c.args, o.theme, c.theme)
		}
	}
	o, _, _ := resolve([]string{"--config", cfg}, env())
	if o.sloProfile != "rag" {
		t.Errorf("slo from the config file: %q", o.sloProfile)
	}
	for _, bad := range [][]string{{"--theme", "solarized"}, {"--slo", "fast"}} {
		code, _, errOut := runArgs(t, nil, append(bad, "--once", "127.0.0.1:1")...)
		if code != 3 || !strings.Contains(errOut, bad[0]) {
			t.Errorf("%v: exit %d, %q", bad, code, errOut)
		}
	}
}
