package main

import (
	"bytes"
	"errors"
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
