package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The terminal guard: what vtop cannot do for itself once it is dead.
// In-process handlers restore the terminal for every signal that can be
// caught (runProgram); SIGKILL and the Go runtime's fatal errors (a
// concurrent map write, a fault in C code, running out of memory) end the
// process with the terminal raw, on the alternate screen and the cursor
// hidden. So before the UI takes the terminal, vtop starts a small watcher
// of itself (its own binary, guardEnv set) that saves the terminal's
// settings, holds one end of a pipe, and waits: a clean exit says so and
// the watcher leaves quietly; any other end closes the pipe unsaid, and the
// watcher puts the settings back, leaves the alternate screen, shows the
// cursor and prints the crash report the runtime sent it.

const guardEnv = "VTOP_TERM_GUARD"

// Bytes on the control pipe: the watcher is ready; vtop exited cleanly.
const (
	guardReady = 'R'
	guardClean = 'Q'
)

// restoreSeq leaves the alternate screen, shows the cursor, resets the
// colours and ends mouse and bracketed-paste modes, as bubbletea's own
// shutdown does.
const restoreSeq = "\x1b[?1049l\x1b[?25h\x1b[0m\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\r\n"

// termGuard is vtop's side of a running watcher.
type termGuard struct {
	ctl   *os.File // write end: closed unsaid when vtop dies
	crash *os.File // write end of the crash-report pipe (debug.SetCrashOutput)
	cmd   *exec.Cmd
}

// startTermGuard starts the watcher for tty; nil when it cannot (the
// terminal is then left to the in-process handlers alone).
func startTermGuard(tty *os.File) *termGuard {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil
	}
	crashR, crashW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		crashR.Close()
		crashW.Close()
		return nil
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), guardEnv+"=1")
	cmd.ExtraFiles = []*os.File{ctlR, crashR, tty, readyW} // fds 3, 4, 5, 6
	err = cmd.Start()
	ctlR.Close()
	crashR.Close()
	readyW.Close()
	if err != nil {
		ctlW.Close()
		crashW.Close()
		readyR.Close()
		return nil
	}
	// Wait until it has saved the settings, before the UI changes them.
	ready := make(chan bool, 1)
	go func() {
		var b [1]byte
		n, _ := readyR.Read(b[:])
		ready <- n == 1 && b[0] == guardReady
	}()
	ok := false
	select {
	case ok = <-ready:
	case <-time.After(2 * time.Second):
	}
	readyR.Close()
	if !ok {
		ctlW.Close()
		crashW.Close()
		cmd.Process.Kill()
		cmd.Wait()
		return nil
	}
	_ = debug.SetCrashOutput(crashW, debug.CrashOptions{})
	return &termGuard{ctl: ctlW, crash: crashW, cmd: cmd}
}

// done tells the watcher vtop restored the terminal itself, and reaps it.
func (g *termGuard) done() {
	if g == nil {
		return
	}
	_ = debug.SetCrashOutput(nil, debug.CrashOptions{})
	g.ctl.Write([]byte{guardClean})
	g.ctl.Close()
	g.crash.Close()
	g.cmd.Wait()
}

// termGuardMain is the watcher (guardEnv set): fds 3 the control pipe, 4
// the crash report, 5 the terminal, 6 where it says it is ready.
func termGuardMain() int {
	// It outlives nothing and must not be ended before vtop: the signals
	// a terminal sends the foreground group, and SIGTTOU, which would stop
	// it restoring the settings once the shell has the terminal back.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTSTP, syscall.SIGTTOU, syscall.SIGTTIN, syscall.SIGPIPE)
	ctl, crash, tty, ready := os.NewFile(3, "control"), os.NewFile(4, "crash"), os.NewFile(5, "tty"), os.NewFile(6, "ready")
	saved, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		return 1
	}
	ready.Write([]byte{guardReady})
	ready.Close()
	// The crash report is read as it comes (the pipe must not fill and
	// block the dying process), keeping at most 1 MiB.
	report := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(crash, 1<<20))
		io.Copy(io.Discard, crash)
		report <- b
	}()
	b, _ := io.ReadAll(ctl)
	if bytes.IndexByte(b, guardClean) >= 0 {
		return 0
	}
	_ = unix.IoctlSetTermios(int(tty.Fd()), unix.TCSETS, saved)
	tty.WriteString(restoreSeq)
	var dump []byte
	select {
	case dump = <-report:
	case <-time.After(time.Second):
	}
	tty.WriteString("vtop ended abnormally; the terminal was restored.\r\n")
	if len(dump) > 0 {
		tty.Write(bytes.ReplaceAll(dump, []byte("\n"), []byte("\r\n")))
	}
	return 0
}
