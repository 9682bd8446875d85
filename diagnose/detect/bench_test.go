package detect

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

func benchSnapshot(b *testing.B) *sources.Snapshot {
	body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "dumps", "armandossrecife-vllm-server-api-chat__v0.10.1-ngc25.09_full.txt"))
	if err != nil {
		b.Fatal(err)
	}
	s, err := sources.NewNormalizer().Normalize(body, "text/plain; version=0.0.4")
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkEvaluate1000: every rule over a frame of 1,000 endpoints with
// full histories: the detector's per-poll cost (building the frame is
// BenchmarkFrame1000). "healthy" has no finding; "thrashing10pct" has one
// endpoint in ten thrashing, so the firing path (findings described every
// poll, superseded ones tracked) is in the figure too.
func BenchmarkEvaluate1000(b *testing.B) {
	for _, c := range []struct {
		name   string
		every  int
		firing int
	}{{"healthy", 0, 0}, {"thrashing10pct", 10, 100}} {
		b.Run(c.name, func(b *testing.B) { benchEvaluate(b, c.every, c.firing) })
	}
}

func benchEvaluate(b *testing.B, every, wantFiring int) {
	snap := benchSnapshot(b)
	targets := make([]diagnose.TargetInfo, 1000)
	for i := range targets {
		targets[i].Name = fmt.Sprintf("replica-%d:8000", i)
		targets[i].MaxNumSeqs = 256
	}
	e := diagnose.New(diagnose.Config{Window: 60 * time.Second, Interval: time.Second}, targets)
	at := t0
	for k := 0; k < 62; k++ {
		at = at.Add(time.Second)
		for i := range targets {
			e.Ingest(i, sources.Scrape{Target: targets[i].Name, Time: at, Data: snap})
		}
	}
	f := e.Frame(at)
	for i := range f.Endpoints {
		// The dump is of an idle server; a healthy fleet is busy: twenty
		// or so sequences running, nothing waiting (else every endpoint
		// holds a gpu_underutilization note, described every poll).
		ep := &f.Endpoints[i]
		ep.Stats.Running, ep.Stats.Waiting = 20, 0
		ep.Subs[0].Stats.Running, ep.Subs[0].Stats.Waiting = 20, 0
		ep.Trend.RunMean, ep.Trend.RunMin, ep.Trend.RunMax = 20, 18, 22
		ep.Trend.WaitMean, ep.Trend.WaitMin, ep.Trend.WaitMax = 0, 0, 0
		if every > 0 && i%every == 0 {
			s := &f.Endpoints[i].Stats
			s.KVUsage, s.PreemptionsRate, s.TTFT.P95, s.AvgPromptLen, s.AvgGenLen = 0.97, 20, 4, 800, 300
			f.Endpoints[i].Subs[0].Stats = *s
		}
	}
	d, err := NewDetector(RulesConfig{})
	if err != nil {
		b.Fatal(err)
	}
	// Warm up past every for, so the thrashing endpoints are firing.
	for k := 0; k < 200; k++ {
		f.Time = f.Time.Add(time.Second)
		d.Evaluate(f)
	}
	firing := 0
	for _, fd := range f.Findings {
		if fd.Severity > diagnose.SevInfo {
			firing++
		}
	}
	if wantFiring == 0 && len(f.Findings) > 0 {
		b.Fatalf("the healthy fleet has %d findings: %+v", len(f.Findings), f.Findings[0])
	}
	if firing != wantFiring {
		b.Fatalf("%d findings firing, want %d: %+v", firing, wantFiring, f.Findings[:min(3, len(f.Findings))])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.Time = f.Time.Add(time.Second)
		d.Evaluate(f)
	}
}
