package sources

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestPollSourceGathersFleet: a fleet large enough that its scrapes are
// gathered before they go on still delivers every target's scrapes, each
// at most once per batch, with data.
func TestPollSourceGathersFleet(t *testing.T) {
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "vllm:num_requests_running{model_name=\"m\"} 1\n")
	})
	var targets []Target
	for i := range gatherFleet + 5 {
		targets = append(targets, Target{Name: fmt.Sprintf("t%02d", i), URL: fmt.Sprintf("%s?i=%d", url, i), Host: "127.0.0.1"})
	}
	f, _ := NewFetcher(HTTPConfig{Timeout: 5 * time.Second})
	cfg := DefaultPollerConfig()
	cfg.Interval = 200 * time.Millisecond
	p := NewPoller(targets, f, cfg)
	if p.gatherFor() <= 0 {
		t.Fatalf("a fleet of %d is not gathered", len(targets))
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Batch)
	done := make(chan error)
	go func() { done <- NewPollSource(p).Run(ctx, out) }()
	got := map[string]int{}
	batches := 0
	for len(got) < len(targets) || minCount(got) < 3 {
		b := <-out
		seen := map[string]bool{}
		for _, s := range b.Scrapes {
			if s.Err != nil || s.Data == nil {
				t.Fatalf("%s: %v", s.Target, s.Err)
			}
			if seen[s.Target] {
				t.Fatalf("%s twice in one batch", s.Target)
			}
			seen[s.Target] = true
			got[s.Target]++
		}
		if len(b.Scrapes) > 0 {
			batches++
		}
	}
	cancel()
	if err := <-done; err != nil { // Run sends with ctx: it returns without a reader
		t.Fatal(err)
	}
	t.Logf("%d scrapes in %d batches", sum(got), batches)
}

func minCount(m map[string]int) int {
	n := -1
	for _, c := range m {
		if n < 0 || c < n {
			n = c
		}
	}
	return n
}

func sum(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}
