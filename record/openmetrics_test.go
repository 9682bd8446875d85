package record

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/internal/nandiff"
	"github.com/vtop-dev/vtop/internal/omtext"
	"github.com/vtop-dev/vtop/sources"
)

// A recording of a server that speaks only OpenMetrics 1.0 replays into the
// same snapshots as one of the same server in classic text: every real
// capture in testdata/dumps, scraped in turn by one target per format and
// recorded the poller's way (changed lines after the first body).
func TestReplayOpenMetrics(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "dumps", "*_full.txt"))
	if len(files) == 0 {
		t.Fatal("no full captures")
	}
	var bodies [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, b, b) // the same body twice: nothing changed
	}
	targets := []sources.Target{{Name: "classic"}, {Name: "openmetrics"}}
	cts := []string{"text/plain; version=0.0.4", omtext.ContentType}
	path := filepath.Join(t.TempDir(), "rec.vtop")
	w, err := Create(path, Header{Started: t0, Interval: Duration(time.Second)}, targets, 0)
	if err != nil {
		t.Fatal(err)
	}
	norms := []*sources.Normalizer{sources.NewNormalizer(), sources.NewNormalizer()}
	for k, b := range bodies {
		at := t0.Add(time.Duration(k) * time.Second)
		for i := range targets {
			body := b
			if i == 1 {
				body = omtext.FromClassic(b)
			}
			snap, err := norms[i].Normalize(body, cts[i])
			if err != nil {
				t.Fatalf("%s scrape %d: %v", targets[i].Name, k, err)
			}
			s := sources.Scrape{Target: targets[i].Name, Time: at, Data: snap}
			s.KeepBody(norms[i], body, cts[i])
			w.Scrape(&s)
		}
		w.Tick(at)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := OpenReplay([]string{path}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var got [2][]*sources.Snapshot
	for {
		it, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if it.Kind != KindScrape {
			continue
		}
		if it.Scrape.Err != nil {
			t.Fatalf("%s: %v", it.Scrape.Target, it.Scrape.Err)
		}
		got[it.Index] = append(got[it.Index], it.Scrape.Data)
	}
	if len(got[0]) != len(bodies) || len(got[1]) != len(bodies) {
		t.Fatalf("replayed %d and %d scrapes, want %d each", len(got[0]), len(got[1]), len(bodies))
	}
	for k := range got[0] {
		if d := nandiff.Diff(got[0][k], got[1][k]); d != "" {
			t.Errorf("scrape %d (%s): OpenMetrics replays differently: %s", k, filepath.Base(files[k/2]), d)
		}
	}
}
