package sim_test

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

// BenchmarkAdvance is one simulated second of one busy replica (one of the
// 1,000 a `vtop sim` process runs at real time).
func BenchmarkAdvance(b *testing.B) {
	for _, sc := range []string{"healthy", "busy", "kv-thrashing"} {
		b.Run(sc, func(b *testing.B) {
			f, err := sim.NewFleet(one(sim.ReplicaConfig{Scenarios: []sim.ScenarioSpec{{Name: sc}}}), 1)
			if err != nil {
				b.Fatal(err)
			}
			f.Advance(time.Minute)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				f.Advance(time.Second)
			}
		})
	}
}

// BenchmarkExposition renders one replica's /metrics, as each scrape does.
func BenchmarkExposition(b *testing.B) {
	for _, c := range []struct {
		name   string
		format sim.Format
		dp     int
	}{{"text", sim.FormatText, 1}, {"openmetrics", sim.FormatOpenMetrics, 1}, {"openmetrics-dp2", sim.FormatOpenMetrics, 2}} {
		b.Run(c.name, func(b *testing.B) {
			f, err := sim.NewFleet(one(sim.ReplicaConfig{DP: c.dp}), 1)
			if err != nil {
				b.Fatal(err)
			}
			f.Advance(time.Minute)
			r := f.Replicas()[0]
			n := len(r.Exposition(c.format))
			b.SetBytes(int64(n))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				_ = r.Exposition(c.format)
			}
		})
	}
}

// BenchmarkServeScrape is one scrape over loopback HTTP with vtop's fetcher
// (OpenMetrics, gzip), the simulator's side and the client's together.
func BenchmarkServeScrape(b *testing.B) {
	f, err := sim.NewFleet(one(sim.ReplicaConfig{}), 1)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := sim.Serve(f, sim.ServeConfig{Host: "127.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	fetcher, _ := sources.NewFetcher(sources.HTTPConfig{})
	var buf bytes.Buffer
	b.ReportAllocs()
	for range b.N {
		if _, _, err := fetcher.Fetch(context.Background(), srv.URLs()[0], &buf); err != nil {
			b.Fatal(err)
		}
	}
}

// sim is in the sources layer: it may use sources, never diagnose
// or the UI (its tests may drive diagnose).
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/vtop-dev/vtop/sim").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range []string{"vtop/diagnose", "vtop/ui", "bubbletea", "lipgloss"} {
			if strings.Contains(dep, bad) {
				t.Errorf("sim depends on %s", dep)
			}
		}
	}
}
