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
// targets from a file_sd file: when the exporter stops listening the
// header says that exporter fails, for how long and why, and when the
// file is made invalid the findings pane says the rule fails and keeps its
// targets; the endpoints stay up all along (neither source feeds them).
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
	// One target named, one from the file: the exporter's GPUs are joined
	// to the named ones (dcgm.Scraper knows the static targets only).
	b, _ := json.Marshal([]map[string]any{{"targets": hosts[1:]}})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tm := newTerm(t, 160, 48)
	tm.start(bin, "--interval", "500ms", "--gpu", "none", "--dcgm", exporter.URL+"/metrics",
		"--log", filepath.Join(tm.dir, "vtop.log"), "--file-sd", path, hosts[0])
	tm.waitFor(20*time.Second, "2/2 up", "GPU · dcgm-exporter")
	exporter.CloseClientConnections()
	exporter.Listener.Close() // refused from now on
	scr := tm.waitFor(20*time.Second, "✖ dcgm-exporter "+name+" failing", "connection refused (is dcgm-exporter running")
	header := strings.SplitN(scr, "\n", 2)[0]
	if !strings.Contains(header, "dcgm-exporter "+name+" failing") {
		t.Errorf("the header does not name the exporter failing: %q", header)
	}
	if !strings.Contains(scr, "2/2 up") {
		t.Errorf("the endpoints are affected by the exporter:\n%s", scr)
	}
	// The file made invalid: the rule fails, its last targets are kept.
	if err := os.WriteFile(path, []byte("[{targets: [unclosed"), 0o644); err != nil {
		t.Fatal(err)
	}
	scr = tm.waitFor(20*time.Second, "file_sd "+path+" failing", "its last 1 targets kept", "(+1)")
	if !strings.Contains(scr, "2/2 up") {
		t.Errorf("the endpoints are affected by the file:\n%s", scr)
	}
	tm.keys("q")
	tm.assertRestored("0")
}
