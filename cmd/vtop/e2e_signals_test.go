package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitFormat polls a tmux format until it reads want.
func (tm *term) waitFormat(d time.Duration, f, want string) {
	tm.t.Helper()
	deadline := time.Now().Add(d)
	for tm.format(f) != want {
		if time.Now().After(deadline) {
			tm.t.Fatalf("after %s %s is %q, want %q:\n%s", d, f, tm.format(f), want, tm.screen())
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// waitState polls a process's state letter (T: stopped).
func waitState(t *testing.T, pid int, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, _, ok := procStat(pid)
		if ok && st == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is in state %q, want %q", pid, st, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SIGQUIT restores the terminal before anything is printed; the goroutine
// dump goes to --log.
func TestE2EQuitSignal(t *testing.T) {
	bin := vtopBinary(t)
	a := movingServer(t, "m")
	tm := newTerm(t, 100, 30)
	logf := filepath.Join(tm.dir, "vtop.log")
	tm.start(bin, "--interval", "250ms", "--window", "2s", "--log", logf, a)
	tm.waitFor(10*time.Second, "Latency", "Throughput")
	if err := syscall.Kill(tm.vtopPID(), syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	tm.assertRestored("2")
	if b, _ := os.ReadFile(logf); !strings.Contains(string(b), "goroutine ") {
		t.Errorf("no goroutine dump in the log:\n%.400s", b)
	}
}

// Ctrl-Z and kill -TSTP stop vtop with the terminal given back to the
// shell (main screen, cooked mode); fg brings the UI back.
func TestE2ESuspendResume(t *testing.T) {
	bin := vtopBinary(t)
	a := movingServer(t, "m")
	tm := newTerm(t, 100, 30)
	tm.typeLine("stty -g > " + tm.dir + "/stty.before")
	tm.typeLine("clear; " + bin + " --interval 250ms --window 2s --log " + filepath.Join(tm.dir, "vtop.log") + " " + a)
	tm.waitFor(10*time.Second, "Latency", "Throughput")
	pid := tm.vtopPID()
	for i, stop := range []func(){
		func() { tm.keys("C-z") },
		func() { syscall.Kill(pid, syscall.SIGTSTP) },
	} {
		stop()
		waitState(t, pid, "T")
		tm.waitFor(10*time.Second, "Stopped")
		tm.waitFormat(5*time.Second, "#{alternate_on}", "0")
		tm.typeLine("clear; stty -g > " + tm.dir + "/stty.mid" + strconv.Itoa(i) + " && cmp -s " + tm.dir + "/stty.before " + tm.dir + "/stty.mid" + strconv.Itoa(i) + " && echo SANE-" + strconv.Itoa(i))
		tm.waitFor(5*time.Second, "SANE-"+strconv.Itoa(i))
		tm.typeLine("fg")
		tm.waitFor(10*time.Second, "Latency", "Throughput")
		tm.waitFormat(5*time.Second, "#{alternate_on}", "1")
	}
	tm.keys("q")
	tm.waitFormat(10*time.Second, "#{alternate_on}", "0")
	for deadline := time.Now().Add(10 * time.Second); !exited(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("vtop did not quit after resuming")
		}
	}
}

// The shell that ran vtop is killed (-9): vtop, orphaned, restores the
// terminal and exits instead of painting a screen nobody reads.
func TestE2EOrphaned(t *testing.T) {
	bin := vtopBinary(t)
	a := movingServer(t, "m")
	tm := newTerm(t, 100, 30)
	// A child shell between the pane's shell and vtop (`; true` keeps it
	// from exec'ing vtop), so it can die while the pane lives on.
	tm.typeLine("clear; bash -c '\"$0\" \"$@\"; true' " + bin + " --interval 250ms --window 2s " + a)
	tm.waitFor(10*time.Second, "Latency", "Throughput")
	shell, _ := strconv.Atoi(tm.format("#{pane_pid}"))
	mid := children(shell)
	if len(mid) != 1 {
		t.Fatalf("children of the pane's shell: %v", mid)
	}
	kids := children(mid[0])
	if len(kids) != 1 {
		t.Fatalf("children of the middle shell: %v", kids)
	}
	if err := syscall.Kill(mid[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !exited(kids[0]); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("orphaned vtop still running")
		}
	}
	tm.waitFormat(5*time.Second, "#{alternate_on}", "0")
}

// Every signal that can end vtop leaves the terminal as it was: the
// crash signals another process sends (dumped, as Go would, to --log),
// the quiet ones (SIGUSR1), and SIGKILL, which no handler sees: vtop's
// watcher restores the terminal then. The shell waits a moment after vtop
// is gone (the watcher's time to notice, longer on a loaded machine)
// before it prints anything: a line printed before the watcher leaves the
// alternate screen is lost with it.
func TestE2EEverySignalRestores(t *testing.T) {
	bin := vtopBinary(t)
	a := movingServer(t, "m")
	for _, c := range []struct {
		sig  syscall.Signal
		exit string
	}{{syscall.SIGABRT, "2"}, {syscall.SIGSEGV, "2"}, {syscall.SIGBUS, "2"}, {syscall.SIGUSR1, "138"}, {syscall.SIGKILL, "137"}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			tm := newTerm(t, 100, 30)
			logf := filepath.Join(tm.dir, "vtop.log")
			tm.typeLine("clear; echo BEFORE-VTOP; stty -g > " + tm.dir + "/stty.before; " + bin + " --interval 250ms --window 2s --log " + logf + " " + a +
				"; e=$?; sleep 2; echo VTOP-EXIT=$e; stty -g > " + tm.dir + "/stty.after; cmp -s " + tm.dir + "/stty.before " + tm.dir + "/stty.after && echo STTY-RESTORED")
			tm.waitFor(10*time.Second, "Latency", "Throughput")
			if err := syscall.Kill(tm.vtopPID(), c.sig); err != nil {
				t.Fatal(err)
			}
			s := tm.waitFor(10*time.Second, "VTOP-EXIT=", "STTY-RESTORED")
			if !strings.Contains(s, "VTOP-EXIT="+c.exit) {
				t.Errorf("exit status, want %s:\n%s", c.exit, s)
			}
			if got := tm.format("#{alternate_on}"); got != "0" {
				t.Errorf("still on the alternate screen (%s)", got)
			}
			if got := tm.format("#{cursor_flag}"); got != "1" {
				t.Errorf("cursor hidden (%s)", got)
			}
			if c.exit == "2" {
				if b, _ := os.ReadFile(logf); !strings.Contains(string(b), "goroutine ") || !strings.Contains(string(b), c.sig.String()[:3]) && !strings.Contains(string(b), "SIG") {
					t.Errorf("no goroutine dump in the log:\n%.300s", b)
				}
			}
		})
	}
}

// A Go fatal error (a throw: no deferred function runs, no signal to
// catch) leaves the terminal as restored as a signal does. One is made on
// demand from outside: the address-space limit of the running process is
// lowered to what it has mapped (prlimit), so the runtime's next mapping
// fails and it throws ("runtime: cannot allocate memory" or a thread it
// cannot start). Resizing the window makes it allocate.
func TestE2EFatalErrorRestores(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	bin := vtopBinary(t)
	a := movingServer(t, "m")
	tm := newTerm(t, 100, 30)
	tm.typeLine("clear; stty -g > " + tm.dir + "/stty.before; " + bin + " --interval 100ms --window 2s " + a +
		" 2>" + tm.dir + "/stderr; e=$?; sleep 2; echo VTOP-EXIT=$e; stty -g > " + tm.dir + "/stty.after; cmp -s " + tm.dir + "/stty.before " + tm.dir + "/stty.after && echo STTY-RESTORED")
	tm.waitFor(10*time.Second, "Latency", "Throughput")
	pid := tm.vtopPID()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var vmKiB int64
	for _, l := range strings.Split(string(st), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmSize:" {
			vmKiB, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	if out, err := exec.Command(prlimit, "--pid", strconv.Itoa(pid), fmt.Sprintf("--as=%d:", vmKiB*1024)).CombinedOutput(); err != nil {
		t.Fatalf("prlimit: %v\n%s", err, out)
	}
	deadline := time.Now().Add(90 * time.Second)
	for size := 0; !strings.Contains(tm.screen(), "VTOP-EXIT="); size++ {
		if time.Now().After(deadline) {
			t.Fatalf("vtop did not die of its address-space limit in 90 s:\n%s", tm.screen())
		}
		w, h := "100", "30"
		if size%2 == 0 {
			w, h = "180", "50"
		}
		tm.tmux("resize-window", "-x", w, "-y", h)
		time.Sleep(500 * time.Millisecond)
	}
	tm.tmux("resize-window", "-x", "100", "-y", "30")
	s := tm.waitFor(10*time.Second, "VTOP-EXIT=", "STTY-RESTORED")
	// 2: the runtime's throw or fault; 134: cgo's abort when a thread
	// cannot start.
	if !strings.Contains(s, "VTOP-EXIT=2") && !strings.Contains(s, "VTOP-EXIT=134") {
		t.Errorf("exit status, want 2 or 134 (a runtime failure):\n%s", s)
	}
	if b, _ := os.ReadFile(filepath.Join(tm.dir, "stderr")); !strings.Contains(string(b), "runtime") { // a throw, cgo's abort, or the GC's fault under the limit
		t.Errorf("not a runtime failure:\n%.600s", b)
	} else {
		t.Logf("%.80s", b)
	}
	if got := tm.format("#{alternate_on}"); got != "0" {
		t.Errorf("still on the alternate screen (%s)", got)
	}
	if got := tm.format("#{cursor_flag}"); got != "1" {
		t.Errorf("cursor hidden (%s)", got)
	}
}
