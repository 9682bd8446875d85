package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

func noenv(string) string { return "" }

// startSim runs `vtop sim args…` and returns its startup line, the URLs in
// it, and a channel with its exit status.
func startSim(t *testing.T, args ...string) (string, <-chan int) {
	t.Helper()
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	status := make(chan int, 1)
	go func() {
		status <- run(append([]string{"sim"}, args...), pw, &stderr, noenv)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no startup line: %v (stderr %q)", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	return line, status
}

var rangeRE = regexp.MustCompile(`http://127\.0\.0\.1:\{(\d+)\.\.(\d+)\}/metrics`)

func TestSimServesAndStops(t *testing.T) {
	line, status := startSim(t, "--listen", "127.0.0.1:0", "--replicas", "3", "--scenario", "healthy",
		"--scenario", "kv-thrashing@1m", "--version", "v0.11", "--dp", "2", "--for", "3s")
	if !strings.HasPrefix(line, "vtop sim: 3 replicas of vLLM 0.11 (v0.11), seed 1: http://127.0.0.1:") {
		t.Fatalf("startup line %q", line)
	}
	urls := regexp.MustCompile(`\d+`).FindAllString(line[strings.Index(line, "{"):], -1)
	if len(urls) == 0 {
		t.Fatalf("no ports in %q", line)
	}
	resp, err := http.Get("http://127.0.0.1:" + urls[0] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	snap, err := sources.NewNormalizer().Normalize(body, resp.Header.Get("Content-Type"))
	if err != nil || len(snap.Subs) != 2 || !snap.Version.Contains(sources.V(0, 11, 0)) {
		t.Fatalf("served %v subs, version %v, err %v", len(snap.Subs), snap.Version, err)
	}
	select {
	case rc := <-status:
		if rc != 0 {
			t.Fatalf("exit status %d", rc)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("--for 3s did not stop it")
	}
}

func TestSimFixedPortsAndSIGTERM(t *testing.T) {
	line, status := startSim(t, "--listen", "127.0.0.1:0", "--replicas", "2")
	if !strings.Contains(line, "2 replicas of vLLM 0.20.2 (latest)") {
		t.Fatalf("startup line %q", line)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case rc := <-status:
		if rc != 0 {
			t.Fatalf("exit status %d after SIGTERM", rc)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not stop it")
	}
	// A block of fixed ports prints as a range (the first free block of a
	// few candidates: CI machines run other things).
	for _, base := range []string{"39400", "41400", "43400", "45400"} {
		var out, errb bytes.Buffer
		rc := run([]string{"sim", "--listen", "127.0.0.1:" + base, "--replicas", "3", "--for", "100ms"}, &out, &errb, noenv)
		if rc != 0 && strings.Contains(errb.String(), "in use") {
			continue
		}
		m := rangeRE.FindStringSubmatch(out.String())
		if rc != 0 || m == nil || m[1] != base || m[2] != strings.Replace(base, "400", "402", 1) {
			t.Fatalf("status %d, output %q %q", rc, out.String(), errb.String())
		}
		return
	}
	t.Skip("no free block of three ports")
}

func TestSimRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"--listen", "0.0.0.0:9000"},
		{"--listen", "10.1.2.3:9000"},
		{"--listen", "[::]:9000"},
		{"--listen", "127.0.0.1"},
		{"--scenario", "no-such-thing"},
		{"--scenario", "busy@soon"},
		{"--scenario", "swapping"}, // V1 never swaps
		{"--version", "0.3"},
		{"--replicas", "0"},
		{"--dp", "2", "--version", "v0.6"},
		{"stray"},
	} {
		var out, errb bytes.Buffer
		if rc := run(append([]string{"sim"}, args...), &out, &errb, noenv); rc != 3 || !strings.HasPrefix(errb.String(), "vtop sim: ") {
			t.Errorf("%v: status %d, stderr %q", args, rc, errb.String())
		}
	}
	var out bytes.Buffer
	if rc := run([]string{"sim", "--help"}, &out, io.Discard, noenv); rc != 0 || !strings.Contains(out.String(), "kv-thrashing") || !strings.Contains(out.String(), "--scenario") {
		t.Errorf("--help: %d %q", rc, out.String())
	}
}

func TestStartDemo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	targets, gpus, trees, stop, err := startDemo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if len(targets) != 6 {
		t.Fatalf("%d targets", len(targets))
	}
	models := map[string]bool{}
	engines := 0
	fetcher, _ := sources.NewFetcher(sources.HTTPConfig{})
	for _, tg := range targets {
		if !tg.IsLocal() || tg.MaxNumSeqs == 0 {
			t.Errorf("target %+v", tg)
		}
		var buf bytes.Buffer
		body, ct, err := fetcher.Fetch(ctx, tg.URL, &buf)
		if err != nil {
			t.Fatalf("%s: %v", tg.Name, err)
		}
		snap, err := sources.NewNormalizer().Normalize(body, ct)
		if err != nil || len(snap.Warnings) > 0 {
			t.Fatalf("%s: %v %v", tg.Name, err, snap.Warnings)
		}
		for _, m := range snap.Models() {
			models[m] = true
		}
		engines += len(snap.Subs)
	}
	if len(models) != 2 || engines != 7 {
		t.Errorf("%d models, %d engines; want 2 and 7 (one data-parallel replica with two)", len(models), engines)
	}
	g := gpus.Sample(ctx)
	if !g.Simulated || len(g.GPUs) != 7 {
		t.Errorf("GPUs: simulated %v, %d devices", g.Simulated, len(g.GPUs))
	}
	// Each replica's process tree holds exactly the GPUs of its engines.
	held := map[int]int{}
	for gi, gpu := range g.GPUs {
		for _, p := range gpu.Processes {
			held[p.PID] = gi
		}
	}
	for i, tr := range trees {
		n := 0
		for _, pid := range tr.PIDs {
			if _, ok := held[pid]; ok {
				n++
			}
		}
		if want := map[bool]int{true: 2, false: 1}[targets[i].Name == "llama-dp"]; n != want {
			t.Errorf("%s: its tree %v holds %d GPUs, want %d", targets[i].Name, tr.PIDs, n, want)
		}
	}
	stop()
	if _, _, err := fetcher.Fetch(ctx, targets[0].URL, new(bytes.Buffer)); err == nil {
		t.Error("the demo still serves after stop")
	}
}

func TestDemoOnceReport(t *testing.T) {
	var out, errb bytes.Buffer
	rc := run([]string{"--demo", "--once", "-w", "2s", "-i", "500ms"}, &out, &errb, noenv)
	if rc != 0 {
		t.Fatalf("status %d\n%s\n%s", rc, out.String(), errb.String())
	}
	for _, want := range []string{"llama-a", "llama-dp", "qwen-c", "engines 2", "fleet: 6/6 up", "GPU 2,3:", "GPU  simulated  7 GPUs", "of 512 (256 × 2 engines)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
