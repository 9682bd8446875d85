package record

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// The hand-written GPU record gives encoding/json's bytes for random
// readings: hostile strings, unknown and infinite numbers, empty and
// absent lists, times with and without a fraction.
func TestGPUJSONMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	for run := 0; run < 2000; run++ {
		s := randSnapshot(r)
		want, wantErr := json.MarshalIndent(toWire(&s), "", " ")
		got, err := appendGPUJSON([]byte("x"), &s)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("run %d: error %v, encoding/json's %v", run, err, wantErr)
		}
		if err == nil && !bytes.Equal(got[1:], want) {
			t.Fatalf("run %d: got\n%s\nencoding/json gives\n%s", run, got[1:], want)
		}
	}
}

func randSnapshot(r *rand.Rand) sources.GPUSnapshot {
	strs := []string{"", "NVIDIA H100 80GB HBM3", "a\"b\\c", "<&>", "\x00\x01\x08\x0c\t\n\r\x1f\x7f", "é\u2028\u2029\U0001F600", "\xff\xfe bad", "x\xe2\x80"}
	str := func() string { return strs[r.IntN(len(strs))] }
	some := func() []string {
		var ss []string
		for range r.IntN(3) {
			ss = append(ss, str())
		}
		if ss == nil && r.IntN(2) == 0 {
			ss = []string{}
		}
		return ss
	}
	nums := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, -0.5, 1e21, 1e-7, 81559.0, 3.14159, 7e300}
	num := func() float64 {
		if r.IntN(2) == 0 {
			return nums[r.IntN(len(nums))]
		}
		return r.Float64() * 1e6
	}
	times := []time.Time{{}, time.Unix(1795521360, 0).UTC(), time.Unix(1795521360, 123456789).In(time.FixedZone("x", 3600)),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	tm := func() time.Time {
		if r.IntN(20) == 0 {
			return times[3] // out of encoding/json's range
		}
		return times[r.IntN(3)]
	}
	s := sources.GPUSnapshot{Time: tm(), Source: str(), Simulated: r.IntN(2) == 0, Unavailable: str(), Notes: some()}
	for i := range r.IntN(4) {
		g := sources.GPU{Index: i, Name: str(), UUID: str(), PCIBusID: str(), UtilGPU: num(), UtilMem: num(), MemUsed: num(),
			MemTotal: num(), TempC: num(), TempSlowdownC: num(), PowerW: num(), PowerLimitW: num(), SMClockMHz: num(),
			MemClockMHz: num(), ClockEvents: some(), ClockEventBits: sources.ClockEvent(r.Uint64() >> r.IntN(64)),
			ECCUncorrected: num(), RetiredPages: num(), RemapPending: r.IntN(2) == 0, RemapFailed: r.IntN(2) == 0,
			PCIeTxBps: num(), PCIeRxBps: num(), MIG: sources.Tri(r.IntN(3) - 1), Problem: str(), FieldsMissing: some(),
			Throttled: r.IntN(2) == 0, SimulatedReason: str()}
		for range r.IntN(3) {
			g.Processes = append(g.Processes, sources.GPUProcess{PID: r.IntN(1 << 22), Name: str(), UsedBytes: num()})
		}
		s.GPUs = append(s.GPUs, g)
	}
	for range r.IntN(3) {
		s.Events = append(s.Events, sources.GPUEvent{Time: tm(), GPU: r.IntN(8), XID: r.IntN(100) - 1, Text: str(), Level: str()})
	}
	return s
}

// Every row of sources.GPUFields goes through a recording by its key, and
// a recording without a row's key (made before the row was added) reads
// that number as unknown, not zero.
func TestGPUFieldsRecorded(t *testing.T) {
	for i := range sources.GPUFields {
		g := sources.GPU{Index: 3, Name: "x"}
		g.SetUnknown()
		*sources.GPUFields[i].At(&g) = float64(1000 + i)
		s := sources.GPUSnapshot{Time: time.Unix(1795521360, 0).UTC(), GPUs: []sources.GPU{g}}
		b, err := appendGPUJSON(nil, &s)
		if err != nil {
			t.Fatal(err)
		}
		key := `"` + sources.GPUFields[i].Wire + `": ` + strconv.Itoa(1000+i)
		if !bytes.Contains(b, []byte(key)) {
			t.Fatalf("%s: record lacks %s:\n%s", sources.GPUFields[i].Wire, key, b)
		}
		var w wireSnapshot
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		back := fromWire(&w)
		for k := range sources.GPUFields {
			got := *sources.GPUFields[k].At(&back.GPUs[0])
			if want := *sources.GPUFields[k].At(&g); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Errorf("%s set: %s read back %v, want %v", sources.GPUFields[i].Wire, sources.GPUFields[k].Wire, got, want)
			}
		}
		old := bytes.Replace(b, []byte(key+",\n"), nil, 1)
		w = wireSnapshot{}
		if err := json.Unmarshal(old, &w); err != nil {
			t.Fatalf("without %s: %v\n%s", key, err, old)
		}
		if v := *sources.GPUFields[i].At(&fromWire(&w).GPUs[0]); !math.IsNaN(v) {
			t.Errorf("a record without %s reads %v, want unknown", sources.GPUFields[i].Wire, v)
		}
	}
}
