package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/app"
	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

// Recording size: one simulated hour, one scrape and one GPU reading per
// second, of one replica in each scenario (the sim's exposition is a real
// vLLM's, names, labels and buckets). Reported as bytes per endpoint-hour.
func BenchmarkRecordBytesPerEndpointHour(b *testing.B) {
	for _, sc := range []string{"healthy", "busy", "kv-thrashing"} {
		b.Run(sc, func(b *testing.B) {
			var size int64
			for b.Loop() {
				path := filepath.Join(b.TempDir(), "hour.vtop")
				simRun(b, path, []sim.ReplicaConfig{{Name: "r", Scenarios: []sim.ScenarioSpec{{Name: sc}}}}, 3600, func(*diagnose.Frame) {})
				st, err := os.Stat(path)
				if err != nil {
					b.Fatal(err)
				}
				size = st.Size()
			}
			b.ReportMetric(float64(size)/1e6, "MB/endpoint-hour")
		})
	}
}

// Replay speed: 50 replicas recorded for 5 simulated minutes, replayed
// through the whole pipeline (parse, engine, detector at every recorded
// evaluation) as vtop replay --once does. Reported as times real time.
func BenchmarkReplay50(b *testing.B) {
	const replicas, minutes = 50, 5
	path := filepath.Join(b.TempDir(), "fleet.vtop")
	var rcs []sim.ReplicaConfig
	for i := 0; i < replicas; i++ {
		sc := "healthy"
		if i%5 == 0 {
			sc = "kv-thrashing"
		}
		rcs = append(rcs, sim.ReplicaConfig{Name: fmt.Sprintf("replica-%d", i), Scenarios: []sim.ScenarioSpec{{Name: sc}}})
	}
	simRun(b, path, rcs, minutes*60, func(*diagnose.Frame) {})
	st, _ := os.Stat(path)
	b.ResetTimer()
	var took, cpu time.Duration
	for b.Loop() {
		start, cpu0 := time.Now(), cpuTime()
		p, err := app.OpenPlayer([]string{path}, 0, "")
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for p.Next() {
			n++
		}
		p.Close()
		if p.Stopped() != nil || n != minutes*60 {
			b.Fatalf("%d evaluations, %v", n, p.Stopped())
		}
		took, cpu = time.Since(start), cpuTime()-cpu0
	}
	// On a shared machine the wall clock says little: CPU time says how
	// fast one core replays (parsing runs on every core there is).
	b.ReportMetric(float64(minutes*time.Minute)/float64(took), "x-realtime")
	b.ReportMetric(float64(minutes*time.Minute)/float64(cpu), "x-realtime-per-cpu")
	b.ReportMetric(float64(st.Size())/1e6, "MB-file")
}

// Recording overhead: the pipeline's own work for 50 replicas per second
// (normalize each body, apply, evaluate) without and with --record (the
// body copy, the delta, zstd and the write). The simulator's rendering of
// the bodies is outside the timer. HTTP and the UI are left out, so the
// share is an upper bound of what recording adds to a real vtop.
func BenchmarkRecordOverhead(b *testing.B) {
	for _, rec := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[rec], func(b *testing.B) {
			const replicas = 50
			fleet, err := sim.NewFleet(sim.FleetConfig{Replicas: func() []sim.ReplicaConfig {
				var rcs []sim.ReplicaConfig
				for i := 0; i < replicas; i++ {
					rcs = append(rcs, sim.ReplicaConfig{Name: fmt.Sprintf("replica-%d", i), Scenarios: []sim.ScenarioSpec{{Name: "busy"}}})
				}
				return rcs
			}()}, 7)
			if err != nil {
				b.Fatal(err)
			}
			o := &options{interval: time.Second, window: time.Minute}
			if rec {
				o.record = filepath.Join(b.TempDir(), "overhead.vtop")
			}
			if o.rules, err = rulesConfig(&fileConfig{}, "chat"); err != nil {
				b.Fatal(err)
			}
			var norms []*sources.Normalizer
			for _, r := range fleet.Replicas() {
				o.targets = append(o.targets, sources.Target{Name: r.Name(), URL: "http://127.0.0.1:9/metrics"})
				norms = append(norms, sources.NewNormalizer())
			}
			p, err := newPipelineOf(o, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				b.Fatal(err)
			}
			if err := p.StartRecording(o.appConfig(), 0); err != nil {
				b.Fatal(err)
			}
			ct := sim.FormatOpenMetrics.ContentType()
			bodies := make([][]byte, replicas)
			var cpu time.Duration
			n := 0
			for b.Loop() {
				b.StopTimer()
				fleet.Advance(time.Second)
				for i, r := range fleet.Replicas() {
					bodies[i] = r.Exposition(sim.FormatOpenMetrics)
				}
				g := fleet.GPUs().Sample(context.Background())
				b.StartTimer()
				cpu0 := cpuTime()
				batch := sources.Batch{Now: fleet.Now(), GPU: &g}
				for i, r := range fleet.Replicas() {
					s := sources.Scrape{Target: r.Name(), Time: r.Now()}
					s.Data, s.Err = norms[i].Normalize(bodies[i], ct)
					if rec && s.Err == nil {
						s.KeepBody(norms[i], bodies[i], ct) // what the poller keeps
					}
					batch.Scrapes = append(batch.Scrapes, s)
				}
				p.Apply(&batch)
				p.Frame()
				cpu += cpuTime() - cpu0
				n++
			}
			// CPU time, not the wall clock, on a machine others share.
			b.ReportMetric(float64(cpu)/float64(n), "cpu-ns/op")
			p.CloseRecording()
		})
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
