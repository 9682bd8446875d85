package dcgm

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

func read(t *testing.T, file string) ([]Device, int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader()
	r.Begin()
	skipped := r.ParseText(b, "exporter-host")
	devs, _ := r.End(time.Unix(0, 0))
	return devs, skipped
}

// Real captures read into the numbers the GPU panel and rules use, in
// vtop's units (bytes, %, W, °C), with pods and hosts for the join.
func TestCaptures(t *testing.T) {
	devs, skipped := read(t, "linode-lke-ai-conformance__rtx4000ada-gpuop25.10.0-pod-labels-pod_uid_full.txt")
	if len(devs) != 1 || skipped != 0 {
		t.Fatalf("linode: %d devices, %d lines skipped", len(devs), skipped)
	}
	d := devs[0]
	// FREE 20015 + USED 1 + RESERVED 457 MiB (NOTES.md §3).
	if d.MemUsed != 1<<20 || d.MemTotal != 20473<<20 || d.Host != "lke529760-766837-0a634ab30000" ||
		d.Name != "NVIDIA RTX 4000 Ada Generation" || d.UUID != "GPU-a8394b51-c086-568a-9f1a-c1e1c934c44c" ||
		math.IsNaN(d.UtilGPU) || math.IsNaN(d.PowerW) || math.IsNaN(d.TempC) || d.MIG != sources.TriNo {
		t.Errorf("linode: %+v", d)
	}
	if d.Pod == "" || d.Namespace == "" {
		t.Errorf("linode: no workload: %+v", d)
	}

	// MIG: instance rows, no GPU_UTIL: utilization from the engine-active ratio.
	devs, skipped = read(t, "gqcn-johns-blog__a800x8-gpu0-mig-2g.20gb-exporter3.x_full.txt")
	mig := 0
	for _, d := range devs {
		if d.MIG == sources.TriYes {
			mig++
			if d.Instance == "" || math.IsNaN(d.MemUsed) {
				t.Errorf("MIG instance: %+v", d)
			}
		}
	}
	if mig == 0 || len(devs) < 8 {
		t.Errorf("gqcn: %d devices, %d MIG instances", len(devs), mig)
	}
	// The exporter's "ERROR - FAILED TO CONVERT TO STRING" lines (a
	// family vtop does not read) cost nothing.
	if skipped != 0 {
		t.Errorf("gqcn: %d lines skipped", skipped)
	}

	devs, _ = read(t, "NVIDIA-dcgm-exporter-pr-736__rtx2000ada-plus-a30-mig-lowercase-hostname_fragment.txt")
	for _, d := range devs {
		if d.Host == "exporter-host" || d.Host == "" {
			t.Errorf("pr-736: lowercase hostname not read: %+v", d)
		}
	}

	devs, _ = read(t, "NVIDIA-dcgm-exporter-issue-317__a30-mig-clock-throttle-reasons_fragment.txt")
	for _, d := range devs {
		if d.ClockEventBits != sources.ClockIdle || d.Throttled {
			t.Errorf("issue-317: the old throttle-reasons name: %+v", d.ClockEventBits)
		}
	}
}

// An XID code becomes an event when it appears or changes, once.
func TestXIDEvents(t *testing.T) {
	r := NewReader()
	step := func(xid float64) []sources.GPUEvent {
		r.Begin()
		r.Add("DCGM_FI_DEV_XID_ERRORS", func(l string) string {
			return map[string]string{"UUID": "GPU-1", "Hostname": "n1", "gpu": "0"}[l]
		}, xid, "")
		_, ev := r.End(time.Unix(0, 0))
		return ev
	}
	if ev := step(0); len(ev) != 0 {
		t.Errorf("no error: %v", ev)
	}
	if ev := step(79); len(ev) != 1 || ev[0].XID != 79 || ev[0].Level != "critical" {
		t.Errorf("XID 79: %v", ev)
	}
	if ev := step(79); len(ev) != 0 {
		t.Errorf("the same code again is not a new event: %v", ev)
	}
	if ev := step(48); len(ev) != 1 {
		t.Errorf("a new code: %v", ev)
	}
}

// A line the exporter could not convert, in a family vtop reads, is
// skipped and counted; the rest of the scrape stands.
func TestBadLine(t *testing.T) {
	r := NewReader()
	r.Begin()
	n := r.ParseText([]byte("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-1\",modelName=\"A B\"} ERROR - FAILED TO CONVERT TO STRING\n"+
		"DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-1\",modelName=\"A B\"} 61\n"), "h")
	devs, _ := r.End(time.Unix(0, 0))
	if n != 1 || len(devs) != 1 || devs[0].TempC != 61 || !math.IsNaN(devs[0].UtilGPU) || devs[0].Host != "h" {
		t.Errorf("skipped %d, %+v", n, devs)
	}
}
