package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The built binary in a terminal, its GPUs from a dcgm-exporter and its
// targets from a file_sd file: when the file is made invalid the header
// says the rule fails, for how long and why, and keeps its target; when
// the exporter stops listening the header names it failing too, and the
// findings pane lists both; the endpoints stay up all along (neither
// source feeds them).
func TestE2ESourcesFailing(t *testing.T) {
	bin := vtopBinary(t)
	hosts := simFleet(t, bin, "--replicas", "2", "--scenario", "healthy")
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		l := `gpu="3",UUID="GPU-00000003-1111-2222-3333-444444444444",pci_bus_id="00000000:03:00.0",device="nvidia3",modelName="NVIDIA H100 80GB HBM3",Hostname="127.0.0.1"`
		fmt.Fprintf(w, "DCGM_FI_DEV_GPU_UTIL{%s} 55\nDCGM_FI_DEV_GPU_TEMP{%s} 61\nDCGM_FI_DEV_FB_USED{%s} 70000\nDCGM_FI_DEV_FB_FREE{%s} 11000\n", l, l, l, l)
	}))
	t.Cleanup(exporter.Close)
	name := strings.TrimPrefix(exporter.URL, "http://")
	path := filepath.Join(t.TempDir(), "sd.json")
	b, _ := json.Marshal([]map[string]any{{"targets": hosts}})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tm := newTerm(t, 160, 48)
	tm.start(bin, "--interval", "500ms", "--gpu", "none", "--dcgm", exporter.URL+"/metrics",
		"--log", filepath.Join(tm.dir, "vtop.log"), "--file-sd", path)
	// The exporter's GPU is joined to the targets the file names (on its
	// host), not left out as no target's.
	tm.waitFor(20*time.Second, "2/2 up", "GPU · dcgm-exporter", " 3 127.0.0.1 H100")
	header := func(scr string) string { return strings.SplitN(scr, "\n", 2)[0] }
	// The file made invalid: the rule fails, its last target is kept.
	if err := os.WriteFile(path, []byte("[{targets: [unclosed"), 0o644); err != nil {
		t.Fatal(err)
	}
	scr := tm.waitFor(20*time.Second, "file_sd "+path+" failing", "its last 2 targets kept")
	if h := header(scr); !strings.Contains(h, "✖ file_sd "+path+" failing") {
		t.Errorf("the header does not name the file_sd rule failing: %q", h)
	}
	if !strings.Contains(scr, "2/2 up") {
		t.Errorf("the endpoints are affected by the file:\n%s", scr)
	}
	// The exporter stops listening: it fails too, and the header names it
	// first (by name), counting the other.
	exporter.CloseClientConnections()
	exporter.Listener.Close() // refused from now on
	scr = tm.waitFor(20*time.Second, "✖ dcgm-exporter "+name+" failing", "connection refused (is dcgm-exporter running")
	if h := header(scr); !strings.Contains(h, "✖ dcgm-exporter "+name+" failing") || !strings.Contains(h, "(+1)") {
		t.Errorf("the header does not name the exporter failing: %q", h)
	}
	if !strings.Contains(scr, "file_sd "+path+" failing") || !strings.Contains(scr, "2/2 up") {
		t.Errorf("the file_sd rule is not listed, or the endpoints are affected:\n%s", scr)
	}
	// Its GPU stays, stale with its last values, not dropped.
	scr = tm.waitFor(20*time.Second, " 3 127.0.0.1 H100", "stale")
	for _, l := range strings.Split(scr, "\n") {
		if strings.Contains(l, " 3 127.0.0.1 H100") && (!strings.Contains(l, "stale") || !strings.Contains(l, "55%")) {
			t.Errorf("the failing exporter's GPU is not shown stale with its last values: %q", l)
		}
	}
	tm.keys("q")
	tm.assertRestored("0")
}
