package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const gib = 1 << 30

var t0 = time.Date(2026, 5, 1, 3, 4, 5, 0, time.UTC)

// gpuFrame is a node with two GPUs, one vLLM endpoint joined to GPU 0, a
// remote endpoint, and an XID on GPU 1 that then fell off the bus.
func gpuFrame() *diagnose.Frame {
	e := diagnose.New(diagnose.Config{}, []diagnose.TargetInfo{{Name: "localhost:8000"}, {Name: "gpu-node-2:8000"}})
	e.SetEndpointProcs(0, sources.ProcTree{Root: 4100, RootName: "vllm", PIDs: []int{4100, 4150, 4151}})
	e.SetEndpointProcs(1, sources.ProcTree{Note: diagnose.NoteNotLocal})
	n := math.NaN()
	for s := range 3 {
		snap := sources.GPUSnapshot{Time: t0.Add(time.Duration(s) * time.Second), Source: "NVML (driver 550.54.15)",
			Notes: []string{"XID events watched on 1 of 2 GPUs (others: not supported)"},
			GPUs: []sources.GPU{{
				Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-0aa", PCIBusID: "00000000:18:00.0",
				UtilGPU: 97, UtilMem: 41, MemUsed: 71 * gib, MemTotal: 80 * gib, TempC: 84, TempSlowdownC: 90,
				PowerW: 698.5, PowerLimitW: 700, SMClockMHz: 1410, MemClockMHz: 2619,
				ClockEventBits: sources.ClockSWPowerCap, ClockEvents: sources.ClockSWPowerCap.Words(), Throttled: true,
				ECCUncorrected: 0, RetiredPages: 2, RemapPending: true, PCIeTxBps: 1.5 * gib, PCIeRxBps: 300 << 20,
				MIG:       sources.TriNo,
				Processes: []sources.GPUProcess{{PID: 4151, Name: "VLLM::Worker", UsedBytes: 70 * gib}, {PID: 999, Name: "", UsedBytes: n}},
			}, {
				Index: 1, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-1bb", UtilGPU: n, UtilMem: n, MemUsed: n, MemTotal: n,
				TempC: n, TempSlowdownC: n, PowerW: n, PowerLimitW: n, SMClockMHz: n, MemClockMHz: n, ECCUncorrected: n,
				RetiredPages: n, PCIeTxBps: n, PCIeRxBps: n,
				Problem: "GPU has fallen off the bus (NVML: GPU is lost): drain its endpoints and reset the GPU or reboot",
			}},
		}
		if s == 1 {
			snap.Events = []sources.GPUEvent{sources.XIDEvent(snap.Time, 1, 79)}
		}
		e.IngestGPU(snap)
	}
	return e.Frame(t0.Add(3 * time.Second))
}

func TestGPUTextGolden(t *testing.T) {
	var b strings.Builder
	writeGPU(&b, gpuFrame())
	fr := gpuFrame()
	for i := range fr.Endpoints {
		b.WriteString(fr.Endpoints[i].Name + ": " + EndpointGPULine(fr, &fr.Endpoints[i]) + "\n")
	}
	golden := filepath.Join("testdata", "gpu.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("GPU section differs from %s (go test ./ui/report -update, then read the diff)\n got:\n%s\nwant:\n%s", golden, b.String(), want)
	}
}

func TestGPUTextStates(t *testing.T) {
	for _, c := range []struct {
		snap sources.GPUSnapshot
		want string
	}{
		{sources.GPUSnapshot{Time: t0, Unavailable: "NVML unavailable: libnvidia-ml.so.1 not found"}, "GPU: NVML unavailable: libnvidia-ml.so.1 not found\n"},
		{sources.GPUSnapshot{Time: t0, Unavailable: "NVML compiled out (built without cgo)"}, "GPU: NVML compiled out (built without cgo)\n"},
		{sources.GPUSnapshot{}, "GPU: not read\n"},
	} {
		var b strings.Builder
		writeGPU(&b, &diagnose.Frame{Time: t0, GPU: c.snap})
		if b.String() != c.want {
			t.Errorf("got %q, want %q", b.String(), c.want)
		}
	}
}

func TestGPUJSON(t *testing.T) {
	fr := gpuFrame()
	fr.GPU.GPUs[1].Stale = true // its source fails: the last values
	var buf bytes.Buffer
	if err := WriteJSON(&buf, BuildJSON(fr, "test", OK)); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema string `json:"schema"`
		GPU    struct {
			Source    string `json:"source"`
			Available bool   `json:"available"`
			Events    []struct {
				GPU, XID      int
				Level, Action string
			} `json:"xid_events"`
		} `json:"gpu"`
		GPUs []map[string]any `json:"gpus"`
		Ends []struct {
			Name string          `json:"name"`
			GPU  json.RawMessage `json:"gpu"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if doc.Schema != SchemaVersion || doc.GPU.Source != "NVML (driver 550.54.15)" || !doc.GPU.Available {
		t.Errorf("status: %+v", doc.GPU)
	}
	if len(doc.GPU.Events) != 1 || doc.GPU.Events[0].XID != 79 || doc.GPU.Events[0].Action != "reboot" || doc.GPU.Events[0].Level != "critical" {
		t.Errorf("events %+v", doc.GPU.Events)
	}
	if len(doc.GPUs) != 2 {
		t.Fatalf("%d gpus", len(doc.GPUs))
	}
	g0, g1 := doc.GPUs[0], doc.GPUs[1]
	for k, want := range map[string]any{"utilization_percent": 97.0, "memory_used_bytes": float64(71 * gib), "power_limit_w": 700.0,
		"temperature_slowdown_c": 90.0, "pcie_rx_bytes_per_s": float64(300 << 20), "mig_mode": false, "throttled": true,
		"retired_pages_or_remapped_rows": 2.0, "remap_pending": true, "clock_event_bits": 4.0, "throttled_since": "2026-05-01T03:04:05Z"} {
		if g0[k] != want {
			t.Errorf("gpus[0].%s = %v, want %v", k, g0[k], want)
		}
	}
	for _, k := range []string{"utilization_percent", "memory_used_bytes", "temperature_c", "power_w", "pcie_tx_bytes_per_s", "mig_mode", "throttled_since"} {
		if v, ok := g1[k]; !ok || v != nil {
			t.Errorf("gpus[1].%s = %v (present %v), want null", k, v, ok)
		}
	}
	if g0["stale"] != false || g1["stale"] != true {
		t.Errorf("stale: gpus[0] %v, gpus[1] %v", g0["stale"], g1["stale"])
	}
	if !strings.Contains(g1["problem"].(string), "fallen off the bus") {
		t.Errorf("problem %v", g1["problem"])
	}
	var ep0 JSONEndpointGPU
	json.Unmarshal(doc.Ends[0].GPU, &ep0)
	if len(ep0.GPUs) != 1 || ep0.GPUs[0] != 0 || ep0.MemoryBytes != 70*gib || ep0.Root == nil || *ep0.Root != 4100 {
		t.Errorf("endpoint 0 gpu: %s", doc.Ends[0].GPU)
	}
	if !strings.Contains(string(doc.Ends[1].GPU), `"note": "not on this host"`) {
		t.Errorf("endpoint 1 gpu: %s", doc.Ends[1].GPU)
	}
	// No join at all: null.
	if j := EndpointGPUJSON(fr, &diagnose.EndpointView{GPU: diagnose.EndpointGPU{MemBytes: math.NaN()}}); j != nil {
		t.Errorf("%+v", j)
	}
}

// The JSON report writes every row of sources.GPUFields by its JSON key,
// between pci_bus_id and clock_events, null when unknown.
func TestGPUJSONFields(t *testing.T) {
	fr := gpuFrame()
	_, gpus := GPUJSON(fr)
	b, err := json.Marshal(gpus)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for i := range fr.GPU.GPUs {
		for _, fd := range sources.GPUFields {
			v, ok := got[i][fd.JSON]
			want := *fd.At(&fr.GPU.GPUs[i])
			switch {
			case !ok:
				t.Errorf("GPU %d: no %q", i, fd.JSON)
			case math.IsNaN(want) && v != nil:
				t.Errorf("GPU %d: %s = %v, want null", i, fd.JSON, v)
			case !math.IsNaN(want) && v != want:
				t.Errorf("GPU %d: %s = %v, want %v", i, fd.JSON, v, want)
			}
		}
	}
	if a, c := bytes.Index(b, []byte(`"pci_bus_id"`)), bytes.Index(b, []byte(`"`+sources.GPUFields[0].JSON+`"`)); c < a || c > bytes.Index(b, []byte(`"clock_events"`)) {
		t.Errorf("numbers not between pci_bus_id and clock_events:\n%s", b)
	}
}
