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

// TestPollSourceUpdate: targets added and removed on the running poller
// are announced in order with their scrapes: an arrival before its first
// scrape, a departure after its last one and no scrape of it afterwards;
// a removed target's scrape in flight is cancelled (it hangs here far
// longer than the test), and a name that comes back is polled again.
func TestPollSourceUpdate(t *testing.T) {
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "vllm:num_requests_running{model_name=\"m\"} 1\n")
	})
	hung := make(chan struct{}, 10)
	cancelled := make(chan struct{}, 10)
	hangURL := serve(t, func(w http.ResponseWriter, r *http.Request) {
		hung <- struct{}{}
		select {
		case <-r.Context().Done():
			cancelled <- struct{}{}
		case <-time.After(time.Minute):
		}
	})
	a := Target{Name: "a", URL: url + "?a", Host: "127.0.0.1"}
	b := Target{Name: "b", URL: url + "?b", Host: "127.0.0.1"}
	h := Target{Name: "h", URL: hangURL, Host: "127.0.0.1"}
	f, _ := NewFetcher(HTTPConfig{Timeout: time.Minute})
	cfg := DefaultPollerConfig()
	cfg.Interval = 50 * time.Millisecond
	ps := NewPollSource(NewPoller([]Target{a}, f, cfg))
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Batch)
	done := make(chan error)
	go func() { done <- ps.Run(ctx, out) }()
	defer func() {
		cancel()
		for {
			select {
			case <-out:
			case <-done:
				return
			}
		}
	}()
	live := map[string]bool{}
	scraped := map[string]int{}
	// next reads batches until cond holds, checking the order on the way.
	next := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for !cond() {
			select {
			case bt := <-out:
				for _, n := range bt.Departed {
					if !live[n] {
						t.Fatalf("%s: %s departed, not live", what, n)
					}
					delete(live, n)
					delete(scraped, n)
				}
				for _, tg := range bt.Arrived {
					if live[tg.Name] {
						t.Fatalf("%s: %s arrived twice", what, tg.Name)
					}
					live[tg.Name] = true
					scraped[tg.Name] = 0
				}
				for _, s := range bt.Scrapes {
					if !live[s.Target] {
						t.Fatalf("%s: a scrape of %s, not live", what, s.Target)
					}
					scraped[s.Target]++
				}
			case <-deadline:
				t.Fatalf("%s: live %v, scraped %v", what, live, scraped)
			}
		}
	}
	next("start", func() bool { return scraped["a"] >= 2 })
	ps.Update([]Target{a, b, h})
	next("b added", func() bool { return live["h"] && scraped["b"] >= 2 })
	<-hung
	ps.Update([]Target{b})
	next("a and h removed", func() bool { return !live["a"] && !live["h"] && scraped["b"] >= 4 })
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the removed target's scrape was not cancelled")
	}
	next("a gone for good", func() bool { return scraped["b"] >= 8 })
	ps.Update([]Target{b, a})
	next("a back", func() bool { return scraped["a"] >= 2 })
	if got := ps.P.Targets(); len(got) != 2 || ps.P.Len() != 2 {
		t.Errorf("polling %v", got)
	}
}
