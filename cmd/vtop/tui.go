package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/vtop-dev/vtop/ui"
	"github.com/vtop-dev/vtop/ui/report"
)

// renderFPS is how often bubbletea flushes a changed screen: at 120 a key
// press is on screen within one 8 ms tick (BENCHMARKS.md), where 60 would
// leave the 16 ms budget no room.
const renderFPS = 120

// runTUI watches the targets in the terminal UI.
func runTUI(ctx context.Context, o *options, stdout, stderr io.Writer, logger *slog.Logger) int {
	p, err := newPipeline(o, logger)
	if err != nil {
		fmt.Fprintf(stderr, "vtop: %v\n", err)
		return int(report.Unknown)
	}
	return watch(ctx, p, o, stdout, stderr, logger)
}

// watch runs the hub and the TUI until the user quits, a signal arrives or
// the hub panics. Whatever ends it, the terminal is restored before watch
// returns, and nothing but the UI is written to the terminal meanwhile.
func watch(ctx context.Context, p *pipeline, o *options, stdout, stderr io.Writer, logger *slog.Logger) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The standard logger writes to stderr: a library that uses it would
	// garble the screen. It goes where --log goes.
	prevLog := log.Writer()
	log.SetOutput(slogWriter{logger})
	defer log.SetOutput(prevLog)

	if err := p.startRecording(o, 0); err != nil {
		fmt.Fprintf(stderr, "vtop: %v\n", err)
		return int(report.Unknown)
	}
	defer p.stopRecording(stderr)
	h := newHub(p)
	m := ui.New(h, ui.Options{Theme: o.theme, SLO: o.rules.SLO.Name, SLOs: o.rules.Profiles, Window: o.window,
		Renderer: lipgloss.NewRenderer(stdout)})
	// Signals are handled here, not by bubbletea: its handler sends on an
	// unbuffered channel and hangs its shutdown when SIGTERM also ends ctx
	// (main's NotifyContext) and the event loop is already gone. SIGINT and
	// SIGTERM end ctx, which kills the program with the terminal restored.
	opts := []tea.ProgramOption{tea.WithAltScreen(), tea.WithContext(ctx), tea.WithOutput(stdout),
		tea.WithFPS(renderFPS), tea.WithoutSignalHandler()}
	if !isTerminal(os.Stdin) {
		opts = append(opts, tea.WithInputTTY())
	}
	prog := tea.NewProgram(m, opts...)

	hubDone := make(chan struct{})
	var hubPanic string
	go func() {
		defer close(hubDone)
		hubPanic = guard(func() { h.run(ctx, o.interval) }, prog.Kill)
	}()

	// A hang-up (the SSH link dropped) must also end vtop and restore the
	// terminal.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		select {
		case <-hup:
			prog.Quit()
		case <-ctx.Done():
		}
	}()

	_, err := prog.Run()
	cancel()
	<-hubDone
	if hubPanic != "" {
		logger.Error("hub panic", "panic", hubPanic)
		fmt.Fprintf(stderr, "vtop: internal error, the terminal was restored:\n%s", hubPanic)
		return 1
	}
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		fmt.Fprintf(stderr, "vtop: %v\n", err)
		return 1
	}
	return 0
}

// guard runs fn; if it panics, kill is called (bubbletea then restores the
// terminal) and the panic and its stack are returned.
func guard(fn func(), kill func()) (panicked string) {
	defer func() {
		if r := recover(); r != nil {
			panicked = fmt.Sprintf("%v\n%s", r, debug.Stack())
			kill()
		}
	}()
	fn()
	return ""
}

// slogWriter sends the standard logger's lines to the --log file.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(b []byte) (int, error) {
	w.l.Info(string(b))
	return len(b), nil
}
