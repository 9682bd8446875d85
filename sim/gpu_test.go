package sim_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

func TestGPUsFollowLoad(t *testing.T) {
	f, err := sim.NewFleet(sim.FleetConfig{Replicas: []sim.ReplicaConfig{
		{Name: "idle", Scenarios: []sim.ScenarioSpec{{Name: "gpu-underutilization"}}},
		{Name: "busy", DP: 2, Scenarios: []sim.ScenarioSpec{{Name: "busy"}}},
		{Name: "old", Profile: "v0.6", GPUMemUtil: 0.8},
	}}, 5)
	if err != nil {
		t.Fatal(err)
	}
	var src sources.GPUSource = f.GPUs()
	var snap sources.GPUSnapshot
	for range 120 {
		f.Advance(time.Second)
		snap = src.Sample(context.Background())
	}
	if !snap.Simulated || snap.Source != "simulated" || snap.Unavailable != "" || !snap.Time.Equal(f.Now()) {
		t.Fatalf("snapshot %+v", snap)
	}
	if len(snap.GPUs) != 4 {
		t.Fatalf("%d GPUs, want one per engine (4)", len(snap.GPUs))
	}
	uuids := map[string]bool{}
	for i, g := range snap.GPUs {
		if g.Index != i || g.SimulatedReason == "" || g.MemTotal <= 0 || uuids[g.UUID] || g.PCIBusID == "" || g.MIG != sources.TriNo {
			t.Fatalf("GPU %d: %+v", i, g)
		}
		uuids[g.UUID] = true
		if len(g.Processes) != 1 || math.Abs(g.MemUsed-g.Processes[0].UsedBytes) > 1 {
			t.Fatalf("GPU %d processes %+v, used %v", i, g.Processes, g.MemUsed)
		}
	}
	// Memory: what --gpu-memory-utilization reserves, plus the CUDA context.
	for i, util := range []float64{0.9, 0.9, 0.9, 0.8} {
		if got := snap.GPUs[i].MemUsed / snap.GPUs[i].MemTotal; math.Abs(got-util) > 0.02 {
			t.Errorf("GPU %d holds %.3f of its memory, want about %.2f", i, got, util)
		}
	}
	// The replicas' fake PIDs own the memory, one engine-core process per
	// GPU in V1 and the server process itself in V0.
	for _, r := range f.Replicas() {
		api, engines := r.PIDs()
		for k, gi := range r.GPUIndexes() {
			p := snap.GPUs[gi].Processes[0]
			if p.PID != engines[k] || (r.Profile().Gen == sources.GenV0) != (p.PID == api) {
				t.Errorf("%s GPU %d: process %+v, api pid %d engines %v", r.Name(), gi, p, api, engines)
			}
		}
	}
	idle, busy := snap.GPUs[0], snap.GPUs[1]
	if !(idle.UtilGPU < 50) || !(busy.UtilGPU > 80) || !(busy.PowerW > idle.PowerW+100) || !(busy.TempC > idle.TempC) || busy.SMClockMHz != 1980 {
		t.Errorf("idle %v%% %vW %v°C %vMHz, busy %v%% %vW %v°C %vMHz", idle.UtilGPU, idle.PowerW, idle.TempC, idle.SMClockMHz,
			busy.UtilGPU, busy.PowerW, busy.TempC, busy.SMClockMHz)
	}
	if busy.Throttled || busy.TempC >= busy.TempSlowdownC {
		t.Errorf("a well-cooled busy GPU throttles: %+v", busy)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s := src.Sample(ctx); s.Unavailable == "" || !s.Simulated {
		t.Errorf("a cancelled sample says %+v", s)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestGPUFreedWhileRestarting(t *testing.T) {
	f, err := sim.NewFleet(one(sim.ReplicaConfig{Scenarios: []sim.ScenarioSpec{{Name: "restart", Delay: 10 * time.Second}}}), 1)
	if err != nil {
		t.Fatal(err)
	}
	f.Advance(15 * time.Second)
	if g := f.GPUs().Sample(context.Background()).GPUs[0]; len(g.Processes) != 0 || g.MemUsed != 0 {
		t.Fatalf("while the process restarts the GPU holds %+v", g.Processes)
	}
	f.Advance(20 * time.Second)
	if g := f.GPUs().Sample(context.Background()).GPUs[0]; len(g.Processes) != 1 {
		t.Fatalf("after the restart: %+v", g.Processes)
	}
}
