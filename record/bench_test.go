package record

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

func BenchmarkRead(b *testing.B) {
	data := newFixture(b).bytes(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), "bench")
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := r.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
		r.Close()
	}
}

// What recording a scrape costs the pipeline: a busy simulated engine's
// consecutive bodies (OpenMetrics, ~700 lines, two thirds of the samples
// moving each second), each normalized and kept as its changed lines as
// the poller keeps it, then written as 50 targets' scrapes (each target
// its own place in the sequence, so the writer holds 50 bodies as a
// 50-replica fleet's does): the line delta, and a tick every 50 scrapes
// (zstd over the batch). The normalizing is outside the timer.
func BenchmarkRecordScrape(b *testing.B) {
	fl, err := sim.NewFleet(sim.FleetConfig{Replicas: []sim.ReplicaConfig{{Name: "r", Scenarios: []sim.ScenarioSpec{{Name: "busy"}}}}}, 7)
	if err != nil {
		b.Fatal(err)
	}
	const steps = 200
	ct := sim.FormatOpenMetrics.ContentType()
	n := sources.NewNormalizer()
	scrapes := make([]sources.Scrape, steps)
	bodies := make([][]byte, steps)
	for i := range scrapes {
		fl.Advance(time.Second)
		body := fl.Replicas()[0].Exposition(sim.FormatOpenMetrics)
		s := sources.Scrape{Target: "r", Time: fl.Now()}
		if s.Data, s.Err = n.Normalize(body, ct); s.Err != nil {
			b.Fatal(s.Err)
		}
		s.KeepBody(n, body, ct)
		bodies[i] = bytes.Clone(body) // for a target's first scrape
		if l := s.Lines; l != nil {
			// Written again at every pass: not one the writer releases.
			s.Lines = &sources.BodyLines{N: l.N, Index: l.Index, Keep: l.Keep, Text: l.Text}
		}
		scrapes[i] = s
	}
	var out countWriter
	const fleet = 50
	var targets []sources.Target
	for t := 0; t < fleet; t++ {
		targets = append(targets, sources.Target{Name: fmt.Sprint("r", t)})
	}
	w, err := NewWriter(&out, Header{}, targets)
	if err != nil {
		b.Fatal(err)
	}
	k := 0
	cpu0 := cpuTime()
	for b.Loop() {
		t := k % fleet
		step := (k/fleet + 3*t) % steps
		s := scrapes[step]
		s.Target = targets[t].Name
		if step == 0 || k < fleet {
			s.Body, s.Lines = bodies[step], nil // a target's first, kept whole
		}
		w.Scrape(&s)
		if t == fleet-1 {
			w.Tick(s.Time)
		}
		k++
	}
	// CPU time, which a loaded machine inflates less than the wall clock.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(k), "cpu-ns/scrape")
	b.ReportMetric(float64(out)/float64(k), "file-bytes/scrape")
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

// A GPU reading of an 8-GPU node (a simulated busy engine on each) as the
// recorder encodes it, beside encoding/json's MarshalIndent of the same
// record (what it used before), then written (the line delta against the
// last reading) with a tick per reading.
func BenchmarkRecordGPU(b *testing.B) {
	var rcs []sim.ReplicaConfig
	for i := range 8 {
		rcs = append(rcs, sim.ReplicaConfig{Name: fmt.Sprint("r", i), Scenarios: []sim.ScenarioSpec{{Name: "busy"}}})
	}
	fl, err := sim.NewFleet(sim.FleetConfig{Replicas: rcs}, 7)
	if err != nil {
		b.Fatal(err)
	}
	var snaps []sources.GPUSnapshot
	for range 100 {
		fl.Advance(time.Second)
		snaps = append(snaps, fl.GPUs().Sample(context.Background()))
	}
	b.Run("encoding-json", func(b *testing.B) {
		k := 0
		for b.Loop() {
			if _, err := json.MarshalIndent(toWire(&snaps[k%len(snaps)]), "", " "); err != nil {
				b.Fatal(err)
			}
			k++
		}
	})
	b.Run("written", func(b *testing.B) {
		var out countWriter
		w, err := NewWriter(&out, Header{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		k := 0
		cpu0 := cpuTime()
		for b.Loop() {
			s := &snaps[k%len(snaps)]
			w.GPU(s)
			w.Tick(s.Time)
			k++
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(k), "cpu-ns/reading")
		b.ReportMetric(float64(out)/float64(k), "file-bytes/reading")
	})
}
