package hostproc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the processes it looks for: a "server" that
// listens on loopback and starts a "worker" (which inherits the listening
// socket, as vLLM's API-server processes do), which starts a "leaf" (which
// does not: it stands for the engine holding the GPU). Each prints its PID
// and blocks until stdin closes.
const helperEnv = "VTOP_HOSTPROC_HELPER"

// quickExit stops a -race helper from sleeping a second at exit.
const quickExit = "GORACE=atexit_sleep_ms=0"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "server":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		lf, _ := ln.(*net.TCPListener).File()
		fmt.Printf("port %d\nserver %d\n", ln.Addr().(*net.TCPAddr).Port, os.Getpid())
		spawn("worker", lf)
	case "worker":
		fmt.Printf("worker %d\n", os.Getpid())
		spawn("leaf", nil)
	case "leaf":
		fmt.Printf("leaf %d\n", os.Getpid())
		io.Copy(io.Discard, os.Stdin)
	case "join": // run a Join as another user; print the result
		port, _ := strconv.Atoi(os.Getenv("VTOP_JOIN_PORT"))
		res := NewJoiner("/proc").Join([]Want{{"127.0.0.1", port}}, nil, time.Now())
		json.NewEncoder(os.Stdout).Encode(res[0])
	}
	os.Exit(0)
}

// spawn starts the next helper on the same stdin and stdout and waits for
// stdin to close.
func spawn(mode string, extra *os.File) {
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), helperEnv+"="+mode, quickExit)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if extra != nil {
		c.ExtraFiles = []*os.File{extra}
	}
	if err := c.Start(); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	io.Copy(io.Discard, os.Stdin)
	c.Wait()
}

type family struct {
	port, server, worker, leaf int
}

// startFamily starts server → worker → leaf and returns their PIDs.
func startFamily(t *testing.T) family {
	t.Helper()
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), helperEnv+"=server", quickExit)
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close() // every helper exits on EOF
		c.Wait()
	})
	got := map[string]int{}
	sc := bufio.NewScanner(out)
	for len(got) < 4 && sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("helper: %q", sc.Text())
		}
		got[k] = n
	}
	if len(got) < 4 {
		t.Fatalf("helpers started: %v", got)
	}
	go io.Copy(io.Discard, out)
	return family{port: got["port"], server: got["server"], worker: got["worker"], leaf: got["leaf"]}
}

func TestJoinFindsTheTreeFromGPUProcesses(t *testing.T) {
	f := startFamily(t)
	if f.server != 0 && f.server == f.worker {
		t.Fatal("helpers share a PID")
	}
	j := NewJoiner("/proc")
	now := time.Now()
	for round := range 2 { // the second round uses the remembered holder
		res := j.Join([]Want{{"127.0.0.1", f.port}, {"localhost", f.port}}, []int{f.leaf}, now)
		for i, r := range res {
			if r.Note != "" || r.Root != f.server {
				t.Fatalf("round %d want %d: root %d (want server %d) note %q", round, i, r.Root, f.server, r.Note)
			}
			for _, pid := range []int{f.server, f.worker, f.leaf} {
				if !slices.Contains(r.PIDs, pid) {
					t.Errorf("round %d: tree %v lacks %d", round, r.PIDs, pid)
				}
			}
			if r.RootName != "hostproc.test" {
				t.Errorf("root name %q", r.RootName)
			}
		}
	}
}

// With no GPU process to start from, the full scan still finds the holder
// and climbs to the topmost process holding the socket.
func TestJoinFullScan(t *testing.T) {
	f := startFamily(t)
	j := NewJoiner("/proc")
	res := j.Join([]Want{{"127.0.0.1", f.port}}, nil, time.Now())
	if res[0].Root != f.server || !slices.Contains(res[0].PIDs, f.leaf) {
		t.Fatalf("root %d (server %d) tree %v note %q", res[0].Root, f.server, res[0].PIDs, res[0].Note)
	}
}

func TestJoinNobodyListens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	res := NewJoiner("/proc").Join([]Want{{"127.0.0.1", port}}, nil, time.Now())
	if res[0].Root != 0 || res[0].Note != fmt.Sprintf("no process listens on port %d here", port) {
		t.Errorf("%+v", res[0])
	}
	// A socket bound to loopback is not reached through another address.
	f := startFamily(t)
	res = NewJoiner("/proc").Join([]Want{{"192.0.2.7", f.port}}, nil, time.Now())
	if res[0].Root != 0 || !strings.HasPrefix(res[0].Note, "no process listens") {
		t.Errorf("%+v", res[0])
	}
}

// Another user's process: its fds are unreadable, which is a note, not a
// failure. Needs root to start the join as an unprivileged user.
func TestJoinOtherUsersProcess(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the join as another user")
	}
	f := startFamily(t)
	// The test binary must be reachable by the unprivileged user.
	dir, err := os.MkdirTemp("", "hostproc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "hostproc.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	c := exec.Command(bin)
	c.Env = append(os.Environ(), helperEnv+"=join", "VTOP_JOIN_PORT="+strconv.Itoa(f.port), quickExit)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := c.Output()
	if err != nil {
		t.Fatalf("join as nobody: %v", err)
	}
	var res struct {
		Root int
		Note string
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Root != 0 || !strings.Contains(res.Note, "processes of other users are unreadable (run vtop as uid 0 or root)") {
		t.Errorf("%+v", res)
	}
}

// The steady state every few seconds: tables re-read, holder remembered.
func BenchmarkJoinRemembered(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	w := []Want{{"127.0.0.1", ln.Addr().(*net.TCPAddr).Port}}
	j := NewJoiner("/proc")
	if r := j.Join(w, nil, time.Now()); r[0].Root != os.Getpid() {
		b.Fatalf("%+v", r[0])
	}
	for b.Loop() {
		j.Join(w, nil, time.Now())
	}
	t, _ := ReadTable("/proc")
	b.ReportMetric(float64(len(t.Procs)), "procs")
}

// The worst case: no holder known, every process's fds read.
func BenchmarkJoinFullScan(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	w := []Want{{"127.0.0.1", ln.Addr().(*net.TCPAddr).Port}}
	for b.Loop() {
		NewJoiner("/proc").Join(w, nil, time.Now())
	}
	t, _ := ReadTable("/proc")
	b.ReportMetric(float64(len(t.Procs)), "procs")
}
