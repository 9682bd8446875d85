package diagnose

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

func benchSnapshot(b *testing.B) *sources.Snapshot {
	body, err := os.ReadFile(filepath.Join("..", "testdata", "dumps", "armandossrecife-vllm-server-api-chat__v0.10.1-ngc25.09_full.txt"))
	if err != nil {
		b.Fatal(err)
	}
	s, err := sources.NewNormalizer().Normalize(body, "text/plain; version=0.0.4")
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkIngest: one full v0.10.1 scrape into an endpoint with a full
// 60 s history (history append, reset correction, window stats, spark point).
func BenchmarkIngest(b *testing.B) {
	snap := benchSnapshot(b)
	e := New(Config{Window: 60 * time.Second, Interval: time.Second}, []TargetInfo{{Name: "r"}})
	at := t0
	for i := 0; i < 120; i++ {
		at = at.Add(time.Second)
		e.Ingest(0, sources.Scrape{Target: "r", Time: at, Data: snap})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		at = at.Add(time.Second)
		e.Ingest(0, sources.Scrape{Target: "r", Time: at, Data: snap})
	}
}

// BenchmarkFrame1000: assembling the frame for 1,000 endpoints with full
// histories (fleet and per-model merges; per-endpoint stats come from ingest).
func BenchmarkFrame1000(b *testing.B) {
	snap := benchSnapshot(b)
	targets := make([]TargetInfo, 1000)
	for i := range targets {
		targets[i].Name = "r"
	}
	e := New(Config{Window: 60 * time.Second, Interval: time.Second}, targets)
	at := t0
	for k := 0; k < 62; k++ {
		at = at.Add(time.Second)
		for i := range targets {
			e.Ingest(i, sources.Scrape{Target: "r", Time: at, Data: snap})
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Frame(at)
	}
}

// BenchmarkIngestChurn: one scrape of a target that invents 256 model names
// each time (the soak's churning endpoint, at the MaxSubs cap): what each
// invented sub-series costs to start.
func BenchmarkIngestChurn(b *testing.B) {
	one := benchSnapshot(b).Subs[0]
	e := New(Config{Window: 60 * time.Second, Interval: time.Second}, []TargetInfo{{Name: "churn"}})
	at := t0
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		snap := &sources.Snapshot{Subs: make([]sources.Sub, 256)}
		for k := range snap.Subs {
			snap.Subs[k] = one
			snap.Subs[k].Key = sources.SubKey{Model: fmt.Sprintf("m%d-%d", i, k)}
		}
		at = at.Add(time.Second)
		e.Ingest(0, sources.Scrape{Target: "churn", Time: at, Data: snap})
	}
}
