package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A GPU dcgm-exporter numbers 5 (gpu="5", device="nvidia5") is GPU 5 on
// the screen, with its host before its model: nvidia-smi -i 5 on that node
// checks the card vtop means. Two cards on the node: 2 and 5, never 0 and 1.
func TestE2EDCGMGPUIndex(t *testing.T) {
	bin := vtopBinary(t)
	target := movingServer(t, "llama-gpu")
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		for _, g := range []struct{ i, util, temp int }{{2, 40, 55}, {5, 97, 83}} {
			l := fmt.Sprintf(`gpu="%d",UUID="GPU-0000000%d-1111-2222-3333-444444444444",pci_bus_id="00000000:0%d:00.0",device="nvidia%d",modelName="NVIDIA H100 80GB HBM3",Hostname="127.0.0.1"`, g.i, g.i, g.i, g.i)
			fmt.Fprintf(w, "DCGM_FI_DEV_GPU_UTIL{%s} %d\nDCGM_FI_DEV_GPU_TEMP{%s} %d\nDCGM_FI_DEV_FB_USED{%s} 70000\nDCGM_FI_DEV_FB_FREE{%s} 11000\n",
				l, g.util, l, g.temp, l, l)
		}
	}))
	t.Cleanup(exporter.Close)
	tm := newTerm(t, 160, 48)
	tm.start(bin, "--interval", "500ms", "--gpu", "none", "--dcgm", exporter.URL, "--log", filepath.Join(tm.dir, "vtop.log"), target)
	// One target: its endpoint view, the GPU panel beside the rows.
	s := tm.waitFor(15*time.Second, "GPU · dcgm-exporter", "on GPU 2, 5")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, " util ") && strings.Contains(l, "°C") {
			lines = append(lines, l[strings.LastIndex(l, "│")+1:])
		}
	}
	if len(lines) != 2 || !strings.Contains(lines[0], " 2 127.0.0.1 H") || !strings.Contains(lines[1], " 5 127.0.0.1 H") {
		t.Errorf("the GPU lines do not name the cards 2 and 5 on 127.0.0.1:\n%s", strings.Join(lines, "\n"))
	}
	tm.keys("q")
	tm.assertRestored("0")
}
