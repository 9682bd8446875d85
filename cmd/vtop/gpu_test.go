package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/hostproc"
	"github.com/vtop-dev/vtop/sources/nvml"
	"github.com/vtop-dev/vtop/ui/report"
)

// vllmServer serves a real vLLM capture on loopback.
func vllmServer(t *testing.T) *httptest.Server {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "dumps", "Ahasannn-hardware-aware-router__v0.11.0_full.txt"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func envFor(t *testing.T) func(string) string {
	dir := t.TempDir()
	return func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return dir
		}
		return ""
	}
}

// noDriver is what NVML says on this machine; tests that need a machine
// without an NVIDIA driver skip where one is installed.
func noDriver(t *testing.T) string {
	t.Helper()
	src := nvml.Open(nvml.Options{})
	defer src.Close()
	u := src.Sample(context.Background()).Unavailable
	if u == "" {
		t.Skip("an NVIDIA driver is installed here")
	}
	if u != "NVML unavailable: libnvidia-ml.so.1 not found" && u != "NVML compiled out (built without cgo)" {
		t.Fatalf("unexpected NVML state %q", u)
	}
	return u
}

// idleStatus checks the exit status of a --once run against the idle v0.11
// capture: OK, or WARNING when gpu_underutilization (which this idle replica
// meets) has held for half the window by the last frame, which depends on
// how fast the scrapes came back. The exit status must be the one the text
// report prints.
func idleStatus(t *testing.T, code int, text string) {
	t.Helper()
	st := report.Status(code)
	if (st != report.OK && st != report.Warning) || !strings.Contains(text, "status "+strings.ToUpper(st.String())) {
		t.Fatalf("exit %d does not match the report or is neither OK nor WARNING:\n%s", code, text)
	}
	if st == report.Warning && (!strings.Contains(text, "findings (1)") || !strings.Contains(text, "[gpu_underutilization]")) {
		t.Fatalf("an idle replica warns only of underutilization:\n%s", text)
	}
}

// The whole binary path on a node without a driver: the report says why
// there is no GPU, and vtop exits with the endpoint's status.
func TestOnceWithoutDriver(t *testing.T) {
	reason := noDriver(t)
	srv := vllmServer(t)
	var out, errb bytes.Buffer
	args := []string{"--once", "--window", "300ms", "--interval", "100ms", srv.URL}
	idleStatus(t, run(args, &out, &errb, envFor(t)), out.String())
	if !strings.Contains(out.String(), "\nGPU: "+reason+"\n") {
		t.Errorf("text report lacks the GPU state:\n%s", out.String())
	}
	out.Reset()
	code := run(append(args, "-o", "json"), &out, &errb, envFor(t))
	var doc struct {
		Status struct {
			Code int `json:"code"`
		} `json:"status"`
		Findings []struct {
			Rule string `json:"rule"`
		} `json:"findings"`
		GPU struct {
			Available   bool   `json:"available"`
			Unavailable string `json:"unavailable"`
		} `json:"gpu"`
		GPUs      []any `json:"gpus"`
		Endpoints []struct {
			GPU any `json:"gpu"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if code != doc.Status.Code || code > int(report.Warning) || (code == int(report.Warning)) != (len(doc.Findings) == 1 && doc.Findings[0].Rule == "gpu_underutilization") {
		t.Errorf("json: exit %d, status %d, findings %+v", code, doc.Status.Code, doc.Findings)
	}
	if doc.GPU.Available || doc.GPU.Unavailable != reason || doc.GPUs == nil || len(doc.GPUs) != 0 || doc.Endpoints[0].GPU != nil {
		t.Errorf("json: %+v", doc)
	}
}

func TestGPUFlag(t *testing.T) {
	srv := vllmServer(t)
	var out, errb bytes.Buffer
	args := []string{"--once", "--window", "300ms", "--interval", "100ms", "--gpu", "none", srv.URL}
	idleStatus(t, run(args, &out, &errb, envFor(t)), out.String())
	if !strings.Contains(out.String(), "\nGPU: GPU reading off (--gpu none)\n") {
		t.Errorf("--gpu none:\n%s", out.String())
	}
	errb.Reset()
	if code := run([]string{"--once", "--gpu", "cuda", srv.URL}, &out, &errb, envFor(t)); code != 3 || !strings.Contains(errb.String(), "--gpu must be auto, nvml or none") {
		t.Errorf("bad --gpu: exit %d %q", code, errb.String())
	}
	reason := noDriver(t)
	errb.Reset()
	if code := run([]string{"--once", "--gpu", "nvml", srv.URL}, &out, &errb, envFor(t)); code != 3 || !strings.Contains(errb.String(), "--gpu nvml: "+reason) {
		t.Errorf("--gpu nvml without NVML: exit %d %q", code, errb.String())
	}
}

// staticGPU stands in for a GPU on this GPU-less machine: one device whose
// memory is held by the test process itself.
type staticGPU struct{ pid int }

func (s staticGPU) Sample(context.Context) sources.GPUSnapshot {
	return sources.GPUSnapshot{Time: time.Now(), Source: "static", GPUs: []sources.GPU{{
		Index: 0, UUID: "GPU-static", UtilGPU: 50, MemUsed: 6 << 30, MemTotal: 80 << 30,
		Processes: []sources.GPUProcess{{PID: s.pid, Name: "gpu.test", UsedBytes: 5 << 30}},
	}}}
}

func (staticGPU) Close() error { return nil }

// The feed joins a loopback endpoint to the process listening on it (this
// test process, through httptest) and its GPU memory; a remote target gets
// a note. Its batches go through the pipeline as any source's do.
func TestGPUFeedJoinsLocalEndpoint(t *testing.T) {
	srv := vllmServer(t)
	local, err := sources.ParseTarget(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	remote, _ := sources.ParseTarget("192.0.2.9:8000")
	o, _, err := resolve([]string{"--gpu", "none", local.Name, remote.Name}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := hostproc.NewGPUFeed(staticGPU{pid: os.Getpid()}, []sources.Target{local, remote}, 20*time.Millisecond, "/proc")
	p, err := newPipelineOf(o, slog.New(slog.NewTextHandler(io.Discard, nil)), g)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan sources.Batch)
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, out) }()
	deadline := time.After(5 * time.Second)
	var ep diagnose.EndpointGPU
	for len(ep.GPUs) == 0 {
		select {
		case b := <-out:
			p.Apply(&b)
			ep = p.Frame().Endpoints[0].GPU
		case <-deadline:
			t.Fatalf("no join: %+v", ep)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ep.Root != os.Getpid() || ep.MemBytes != 5<<30 || ep.GPUs[0] != 0 || math.IsNaN(ep.UtilGPU) {
		t.Errorf("local endpoint: %+v", ep)
	}
	if r := p.Frame().Endpoints[1].GPU; r.Note != diagnose.NoteNotLocal {
		t.Errorf("remote endpoint: %+v", r)
	}
}
