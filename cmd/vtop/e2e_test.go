package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// End-to-end: the real binary in a real terminal (tmux), driven by keys,
// read back with capture-pane. .ci/run installs tmux; without it these
// tests say so and skip.

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// vtopBinary builds the binary once per test run.
func vtopBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "vtop-e2e-")
		if buildErr != nil {
			return
		}
		builtBin = filepath.Join(buildDir, "vtop")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// term is one tmux server (its own socket) with one pane running a shell.
type term struct {
	t    *testing.T
	sock string
	dir  string
}

var termSeq int

func newTerm(t *testing.T, w, h int) *term {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it): skipping the terminal end-to-end test")
	}
	termSeq++
	tm := &term{t: t, sock: fmt.Sprintf("vtop-e2e-%d-%d", os.Getpid(), termSeq), dir: t.TempDir()}
	// A plain shell with a known prompt; TERM as a real terminal sets it.
	cmd := exec.Command("tmux", "-L", tm.sock, "-f", "/dev/null", "new-session", "-d", "-x", strconv.Itoa(w), "-y", strconv.Itoa(h),
		"env", "-i", "PATH="+os.Getenv("PATH"), "HOME="+tm.dir, "TERM=xterm-256color", "LANG=C.UTF-8", "PS1=$ ", "XDG_CONFIG_HOME="+tm.dir,
		"HISTFILE=", // no history file: bash would write it into dir as the server dies
		"bash", "--norc", "--noprofile")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	shell, _ := strconv.Atoi(tm.format("#{pane_pid}"))
	// Cleanups run last-registered first: this one, before TempDir's
	// removal, waits for the shell and whatever it ran to be gone, so
	// nothing writes into dir while it is being removed.
	t.Cleanup(func() {
		procs := append([]int{shell}, children(shell)...) // a vtop left running by a failed test too
		exec.Command("tmux", "-L", tm.sock, "kill-server").Run()
		for _, pid := range procs {
			for deadline := time.Now().Add(5 * time.Second); !exited(pid) && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	tm.waitFor(5*time.Second, "$") // capture-pane trims the space after the prompt
	return tm
}

// procStat reads a process's state letter and parent from /proc; ok is
// false when there is no such process.
func procStat(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if pid <= 0 || err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid ...
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, _ = strconv.Atoi(fields[1])
	return fields[0], ppid, true
}

// exited: the process is gone or a zombie (it runs no more code).
func exited(pid int) bool {
	state, _, ok := procStat(pid)
	return !ok || state == "Z" || state == "X"
}

func (tm *term) tmux(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.sock}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (tm *term) screen() string { return tm.tmux("capture-pane", "-p") }

// keys sends tmux key names ("j", "Enter", "Escape", "?").
func (tm *term) keys(keys ...string) { tm.tmux(append([]string{"send-keys"}, keys...)...) }

// typeLine types a shell command and runs it.
func (tm *term) typeLine(s string) { tm.tmux("send-keys", "-l", s); tm.keys("Enter") }

// waitFor polls the pane until it shows every string, or fails with what
// it shows.
func (tm *term) waitFor(d time.Duration, want ...string) string {
	tm.t.Helper()
	deadline := time.Now().Add(d)
	for {
		s := tm.screen()
		ok := true
		for _, w := range want {
			if !strings.Contains(s, w) {
				ok = false
			}
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("after %s the screen lacks %q:\n%s", d, want, s)
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// waitGone polls until the pane no longer shows s.
func (tm *term) waitGone(d time.Duration, s string) {
	tm.t.Helper()
	deadline := time.Now().Add(d)
	for strings.Contains(tm.screen(), s) {
		if time.Now().After(deadline) {
			tm.t.Fatalf("after %s the screen still shows %q:\n%s", d, s, tm.screen())
		}
		time.Sleep(40 * time.Millisecond)
	}
}

func (tm *term) format(f string) string {
	return strings.TrimSpace(tm.tmux("display-message", "-p", f))
}

// start runs vtop from the shell, bracketed so the test can tell the
// terminal was restored: the stty settings before and after are compared,
// and the exit status printed.
func (tm *term) start(bin string, args ...string) {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + a + "'"
	}
	line := fmt.Sprintf("clear; echo BEFORE-VTOP; stty -g > %[1]s/stty.before; %[2]s %[3]s; echo VTOP-EXIT=$?; stty -g > %[1]s/stty.after; cmp -s %[1]s/stty.before %[1]s/stty.after && echo STTY-RESTORED",
		tm.dir, bin, strings.Join(q, " "))
	tm.typeLine(line)
}

// vtopPID is the vtop process: the pane's shell's child.
func (tm *term) vtopPID() int {
	tm.t.Helper()
	shell, _ := strconv.Atoi(tm.format("#{pane_pid}"))
	if kids := children(shell); len(kids) > 0 {
		return kids[0]
	}
	tm.t.Fatal("no vtop process under the pane's shell")
	return 0
}

// children lists the live processes whose parent is ppid.
func children(ppid int) []int {
	var kids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, parent, ok := procStat(pid); ok && parent == ppid && !exited(pid) {
			kids = append(kids, pid)
		}
	}
	return kids
}

// assertRestored checks the terminal after vtop exited: the main screen
// is back with what was on it, the cursor shows, the tty settings are as
// before, and vtop printed nothing.
func (tm *term) assertRestored(exit string) {
	tm.t.Helper()
	s := tm.waitFor(10*time.Second, "VTOP-EXIT=")
	s = tm.waitFor(5*time.Second, "STTY-RESTORED")
	if !strings.Contains(s, "VTOP-EXIT="+exit) {
		tm.t.Errorf("exit status, want %s:\n%s", exit, s)
	}
	if got := tm.format("#{alternate_on}"); got != "0" {
		tm.t.Errorf("still on the alternate screen (%s)", got)
	}
	if got := tm.format("#{cursor_flag}"); got != "1" {
		tm.t.Errorf("cursor hidden (%s)", got)
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "BEFORE-VTOP") {
			start = i
		}
	}
	// Between the marker and the exit line there is nothing: the UI lived
	// on the alternate screen and no log or error reached the terminal.
	if start < 0 || start+1 >= len(lines) || !strings.HasPrefix(lines[start+1], "VTOP-EXIT=") {
		tm.t.Errorf("output outside the UI:\n%s", s)
	}
}

// The fleet from live loopback engines: fleet view, help, filter and
// drill-down to the four rows, back, a resize below the minimum and back,
// quit — at 80×24 and 160×48.
func TestE2ETargets(t *testing.T) {
	bin := vtopBinary(t)
	a, b, dead := movingServer(t, "llama-e2e"), movingServer(t, "qwen-e2e"), deadAddr(t)
	for _, sz := range [][2]int{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			tm := newTerm(t, sz[0], sz[1])
			tm.start(bin, "--interval", "250ms", "--window", "3s", "--log", filepath.Join(tm.dir, "vtop.log"), a, b, dead)
			s := tm.waitFor(10*time.Second, "2/3 up", "run/wait", "TTFT p95", "✗ down", "Findings")
			if strings.Contains(s, "VTOP-EXIT") {
				t.Fatalf("vtop exited:\n%s", s)
			}
			tm.keys("?")
			tm.waitFor(5*time.Second, "Help: keys and symbols", "pause: freeze the screen")
			tm.keys("Escape")
			tm.waitGone(5*time.Second, "Help: keys and symbols")
			// Filter on the port of a, keep the filter, open it.
			port := a[strings.LastIndexByte(a, ':')+1:]
			tm.keys("/")
			tm.tmux("send-keys", "-l", port)
			tm.waitFor(5*time.Second, "1 of 3 endpoints")
			tm.keys("Enter")
			tm.keys("Enter")
			s = tm.waitFor(5*time.Second, a+" · ", "Latency", "Cache", "Queue", "Throughput", "TTFT", "inter-token", "KV", "42%", "running", "5 of --")
			if !strings.Contains(s, "llama-e2e") {
				t.Errorf("endpoint view lacks the model:\n%s", s)
			}
			tm.keys("Escape")
			tm.waitFor(5*time.Second, "run/wait")
			tm.tmux("resize-window", "-x", "70", "-y", "20")
			tm.waitFor(5*time.Second, "terminal too small (70×20, need 80×24)")
			tm.tmux("resize-window", "-x", strconv.Itoa(sz[0]), "-y", strconv.Itoa(sz[1]))
			tm.waitFor(5*time.Second, "run/wait")
			tm.keys("q")
			tm.assertRestored("0")
		})
	}
}

// SIGTERM, SIGINT and a hang-up end vtop with the terminal restored.
func TestE2ESignals(t *testing.T) {
	bin := vtopBinary(t)
	a := movingServer(t, "m")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			tm := newTerm(t, 100, 30)
			tm.start(bin, "--interval", "250ms", "--window", "2s", a)
			tm.waitFor(10*time.Second, "Latency", "Throughput")
			if err := syscall.Kill(tm.vtopPID(), sig); err != nil {
				t.Fatal(err)
			}
			tm.assertRestored("0")
		})
	}
}

// vtop --demo: the built-in fleet, keys sent in one burst as a slow link
// delivers them, drill-down to a data-parallel endpoint, the GPU pane, the
// fleet aggregate.
func TestE2EDemo(t *testing.T) {
	bin := vtopBinary(t)
	for _, sz := range [][2]int{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			tm := newTerm(t, sz[0], sz[1])
			tm.start(bin, "--demo", "--log", filepath.Join(tm.dir, "vtop.log"))
			tm.waitFor(15*time.Second, "6/6 up", "llama-a", "llama-dp", "qwen-c", "run/wait", "GPU · simulated")
			// One write: bubbletea reads "/llama-dp" as one message. The
			// table is sorted by severity, so the row is found by name.
			tm.keys("/", "llama-dp", "Enter", "Enter")
			s := tm.waitFor(5*time.Second, "llama-dp · ", "2 engin", "Latency", "Cache", "Queue", "Throughput", "this endpoint")
			if !strings.Contains(s, "simulated") {
				t.Errorf("the GPU panel does not say simulated:\n%s", s)
			}
			tm.keys("Tab", "Tab") // the findings pane, then the GPUs
			tm.waitFor(5*time.Second, "› GPU · simulated")
			tm.keys("Escape") // one key back to the fleet, whatever pane had the keys
			tm.waitGone(5*time.Second, "› GPU")
			tm.waitFor(5*time.Second, "run/wait")
			tm.keys("Escape") // and the filter is cleared
			tm.keys("g", "Enter")
			tm.waitFor(5*time.Second, "Fleet · aggregate of", "Latency", "Throughput")
			tm.keys("?")
			tm.waitFor(5*time.Second, "Help: keys and symbols")
			tm.keys("q")
			tm.assertRestored("0")
		})
	}
}

// simFleet starts `vtop sim` (the binary) and returns its replicas' URLs.
func simFleet(t testing.TB, bin string, args ...string) []string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"sim", "--listen", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// "vtop sim: 3 replicas of vLLM …: http://127.0.0.1:{38689,40109,42833}/metrics"
	line := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stderr)
		l, _ := r.ReadString('\n')
		line <- l
		io.Copy(io.Discard, r)
	}()
	var s string
	select {
	case s = <-line:
	case <-time.After(10 * time.Second):
		t.Fatal("vtop sim said nothing")
	}
	m := regexp.MustCompile(`http://127\.0\.0\.1:(\{[0-9,]+\}|[0-9]+)/metrics`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no URLs in %q", s)
	}
	var urls []string
	for _, p := range strings.Split(strings.Trim(m[1], "{}"), ",") {
		urls = append(urls, "127.0.0.1:"+p)
	}
	return urls
}

// vtop against a `vtop sim` fleet: sort, expand engines, filter, pause,
// window, theme, drill-down, quit.
func TestE2ESimFleet(t *testing.T) {
	bin := vtopBinary(t)
	urls := simFleet(t, bin, "--replicas", "4", "--dp", "2", "--scenario", "healthy", "--scenario", "queue-backlog", "--models", "meta-llama/Llama-3.1-8B-Instruct,Qwen/Qwen2.5-14B-Instruct")
	for _, sz := range [][2]int{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			tm := newTerm(t, sz[0], sz[1])
			tm.start(bin, append([]string{"--interval", "500ms", "--log", filepath.Join(tm.dir, "vtop.log")}, urls...)...)
			// The table shows what tells the names apart: the port.
			port := func(u string) string { return u[strings.LastIndexByte(u, ':'):] }
			tm.waitFor(10*time.Second, "4/4 up", port(urls[0]), port(urls[3]), "run/wait", "sort:severity")
			tm.keys("s")
			tm.waitFor(5*time.Second, "sort:name")
			tm.keys("g", "j", "Space")
			// Engine rows stay apart at every width: "└ engine 0", or
			// "└ e0" where that does not fit.
			scr := tm.waitFor(5*time.Second, "└ e")
			for _, e := range []string{"0", "1"} {
				if !strings.Contains(scr, "└ engine "+e) && !strings.Contains(scr, "└ e"+e) {
					t.Errorf("engine %s's row is not told apart:\n%s", e, scr)
				}
			}
			tm.keys("p")
			tm.waitFor(5*time.Second, "‖ PAUSED")
			tm.keys("p")
			tm.waitGone(5*time.Second, "PAUSED")
			tm.keys("+")
			tm.waitFor(5*time.Second, "window 2m")
			tm.keys("t", "?", "G") // G: the end of the help, where the theme is
			tm.waitFor(5*time.Second, "Theme light")
			tm.keys("Escape")
			tm.waitGone(5*time.Second, "Help: keys")
			tm.keys("/")
			tm.tmux("send-keys", "-l", "qwen")
			tm.waitFor(5*time.Second, "2 of 4 endpoints")
			tm.keys("Enter", "Enter")
			tm.waitFor(5*time.Second, "Qwen/Qwen2.5-14B-Instruct", "2 engin", "Latency", "Throughput", "Engines (2)")
			tm.keys("q")
			tm.assertRestored("0")
		})
	}
}

// An incident already two minutes old when vtop opens (the simulator's
// --warmup, not two minutes of sleep): within seconds the screen names the
// cause and the flag to change, pending or fired, at 80×24 and 200×60.
func TestE2EIncidentUnderWay(t *testing.T) {
	bin := vtopBinary(t)
	urls := simFleet(t, bin, "--scenario", "kv-thrashing", "--warmup", "2m")
	for _, sz := range [][2]int{{80, 24}, {200, 60}} {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			tm := newTerm(t, sz[0], sz[1])
			tm.start(bin, append([]string{"--interval", "500ms", "--log", filepath.Join(tm.dir, "vtop.log")}, urls...)...)
			s := tm.waitFor(10*time.Second, "KV cache thrashing", "--max-num-seqs")
			if strings.Contains(s, "✓ no findings") {
				t.Errorf("a green no-findings beside the cause:\n%s", s)
			}
			tm.keys("q")
			tm.assertRestored("0")
		})
	}
}
