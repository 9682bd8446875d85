package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"golang.org/x/sys/unix"

	"github.com/vtop-dev/vtop/app"
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
func watch(ctx context.Context, p *app.Pipeline, o *options, stdout, stderr io.Writer, logger *slog.Logger) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The standard logger writes to stderr: a library that uses it would
	// garble the screen. It goes where --log goes.
	prevLog := log.Writer()
	log.SetOutput(slogWriter{logger})
	defer log.SetOutput(prevLog)

	if err := p.StartRecording(o.appConfig(), 0); err != nil {
		fmt.Fprintf(stderr, "vtop: %v\n", err)
		return int(report.Unknown)
	}
	defer p.StopRecording(stderr)
	h := app.NewHub(p)
	m := ui.New(h, ui.Options{Theme: o.theme, SLO: o.rules.SLO.Name, SLOs: o.rules.Profiles, Window: o.window,
		Renderer: lipgloss.NewRenderer(stdout), Copy: osc52(stdout), Actions: uiActions(o.actions)})
	return runProgram(ctx, m, stdout, stderr, logger, o.hasLog(), "vtop", func(ctx context.Context) {
		h.Run(ctx, o.interval)
	})
}

// osc52 puts text on the clipboard of the terminal vtop draws on: an OSC
// 52 sequence, which terminals honour over SSH, and tmux with
// set-clipboard on (it keeps a paste buffer and passes it on). One write,
// between the renderer's frames.
func osc52(w io.Writer) func(string) error {
	return func(s string) error {
		_, err := io.WriteString(w, "\x1b]52;c;"+base64.StdEncoding.EncodeToString([]byte(s))+"\a")
		return err
	}
}

// runProgram runs m in the alternate screen while feed runs beside it (the
// hub that hands it frames), for the live TUI and a replay alike. Whatever
// ends it (q, a signal, a hang-up, an orphaned process, a panic in feed),
// the terminal is restored before it returns; name prefixes its errors.
func runProgram(ctx context.Context, m tea.Model, stdout, stderr io.Writer, logger *slog.Logger, hasLog bool, name string, feed func(context.Context)) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Signals are handled here, not by bubbletea: its handler sends on an
	// unbuffered channel and hangs its shutdown when SIGTERM also ends ctx
	// (main's NotifyContext) and the event loop is already gone. SIGINT and
	// SIGTERM end ctx, which kills the program with the terminal restored.
	// Ctrl-Z reaches a raw-mode program as a key; it suspends like a
	// SIGTSTP from outside (kill -TSTP), through the same path.
	tstp := make(chan os.Signal, 1)
	suspendKey := func(_ tea.Model, msg tea.Msg) tea.Msg {
		if k, ok := msg.(tea.KeyMsg); ok && k.Type == tea.KeyCtrlZ {
			select {
			case tstp <- syscall.SIGTSTP:
			default:
			}
			return nil
		}
		return msg
	}
	opts := []tea.ProgramOption{tea.WithAltScreen(), tea.WithContext(ctx), tea.WithOutput(stdout),
		tea.WithFPS(renderFPS), tea.WithoutSignalHandler(), tea.WithFilter(suspendKey),
		// Clicks select and open, the wheel scrolls (Shift holds the
		// terminal's own selection in most terminals).
		tea.WithMouseCellMotion()}
	if !isTerminal(os.Stdin) {
		opts = append(opts, tea.WithInputTTY())
	}
	prog := tea.NewProgram(m, opts...)

	feedDone := make(chan struct{})
	var feedPanic string
	go func() {
		defer close(feedDone)
		feedPanic = guard(func() { feed(ctx) }, prog.Kill)
	}()

	// A hang-up (the SSH link dropped) must also end vtop and restore the
	// terminal; so must SIGQUIT, whose goroutine dump is written after the
	// terminal is restored (to --log when set), not over the alternate screen.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	quit := make(chan os.Signal, 1)
	signal.Notify(quit, dumpSignals...)
	defer signal.Stop(quit)
	other := make(chan os.Signal, 1)
	signal.Notify(other, endSignals...)
	defer signal.Stop(other)
	signal.Notify(tstp, syscall.SIGTSTP)
	defer signal.Stop(tstp)
	var stacks []byte
	var ended os.Signal // the signal that ended it, for the exit status
	sigDone := make(chan struct{})
	go func() {
		defer close(sigDone)
		orphan := orphaned(ctx)
		for {
			select {
			case <-hup:
				prog.Quit()
				return
			case <-orphan:
				// The parent died (kill -9 of the shell): nobody will read
				// this terminal again; leave it as it was found.
				logger.Info("parent process gone; exiting")
				prog.Quit()
				return
			case sig := <-quit:
				stacks, ended = allStacks(), sig
				prog.Kill()
				return
			case sig := <-other:
				ended = sig
				prog.Kill()
				return
			case <-tstp:
				suspend(ctx, prog, logger)
			case <-ctx.Done():
				return
			}
		}
	}()

	// What no handler here can catch (SIGKILL, the runtime's fatal errors)
	// leaves the terminal to the watcher (termguard.go).
	var tg *termGuard
	if f, ok := stdout.(*os.File); ok && isTerminal(f) {
		tg = startTermGuard(f)
	}
	_, err := prog.Run()
	cancel()
	<-sigDone
	<-feedDone
	tg.done()
	if stacks != nil {
		name := sigName(ended)
		logger.Error(name, "goroutines", string(stacks))
		if !hasLog {
			fmt.Fprintf(stderr, "%s: the terminal was restored\n\n%s", name, stacks)
		}
		return 2
	}
	if ended != nil {
		logger.Info("ended by a signal", "signal", sigName(ended))
		if n, ok := ended.(syscall.Signal); ok {
			return 128 + int(n)
		}
		return 1
	}
	if feedPanic != "" {
		logger.Error(name+" panic", "panic", feedPanic)
		fmt.Fprintf(stderr, "%s: internal error, the terminal was restored:\n%s", name, feedPanic)
		return 1
	}
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// dumpSignals end vtop with a goroutine dump, as the Go runtime would
// (SIGQUIT, and the crash signals when another process sends them: a
// fault of vtop's own is the runtime's, see termguard.go); endSignals end
// it quietly, as their default action would. Either way the terminal is
// restored first.
var (
	dumpSignals = []os.Signal{syscall.SIGQUIT, syscall.SIGABRT, syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE,
		syscall.SIGILL, syscall.SIGTRAP, syscall.SIGSYS, syscall.SIGSTKFLT}
	endSignals = []os.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGVTALRM, syscall.SIGXCPU,
		syscall.SIGXFSZ, syscall.SIGPWR}
)

// sigName is "SIGQUIT" for SIGQUIT.
func sigName(s os.Signal) string {
	if n, ok := s.(syscall.Signal); ok {
		if name := unix.SignalName(n); name != "" {
			return name
		}
	}
	return s.String()
}

// suspend stops vtop with the terminal given back (Ctrl-Z, SIGTSTP) and takes
// it again on SIGCONT (fg). The whole process group stops, as a shell's job
// control expects. It stops with SIGSTOP: once notified, SIGTSTP stays
// caught by the Go runtime even after signal.Reset, which would swallow it.
func suspend(ctx context.Context, prog *tea.Program, logger *slog.Logger) {
	if err := prog.ReleaseTerminal(); err != nil {
		logger.Warn("suspend: release terminal", "err", err)
	}
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	_ = syscall.Kill(0, syscall.SIGSTOP)
	select {
	case <-cont:
	case <-ctx.Done():
	}
	if ctx.Err() != nil {
		return
	}
	if err := prog.RestoreTerminal(); err != nil {
		logger.Warn("resume: restore terminal", "err", err)
	}
}

// orphaned is closed when vtop's parent changes (the shell that ran it was
// killed): checked twice a second, one getppid each.
func orphaned(ctx context.Context) <-chan struct{} {
	c := make(chan struct{})
	parent := os.Getppid()
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if os.Getppid() != parent {
					close(c)
					return
				}
			}
		}
	}()
	return c
}

// allStacks is every goroutine's stack, as the Go runtime prints on SIGQUIT.
func allStacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 64<<20 {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
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
