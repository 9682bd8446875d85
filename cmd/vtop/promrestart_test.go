package main

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/promapi"
)

// Through a live Prometheus, a crash-looping replica (up 40 s, then its
// port refuses for 20 s while the model loads, again and again) is down
// while it refuses (Prometheus' up is 0, its series stale), then up again
// with the restart counted: never "left" and "joined" again, which is how
// it read before the refresh looked at up.
func TestPrometheusRestartIsNotDeparture(t *testing.T) {
	bin := vtopBinary(t)
	urls := simFleet(t, bin, "--replicas", "2", "--scenario", "healthy", "--scenario", "crash-loop")
	var scrape strings.Builder
	scrape.WriteString("scrape_configs:\n  - job_name: vllm\n    static_configs:\n")
	for i, u := range urls {
		tg, _ := sources.ParseTarget(u)
		scrape.WriteString("      - targets: ['" + tg.Name + "']\n        labels: {namespace: sim, pod: replica-" + string(rune('0'+i)) + "}\n")
	}
	srv := startPrometheus(t, nil, scrape.String())
	waitSeries(t, srv, 2)
	hb, _ := startHubEvery(t, time.Second, "--prometheus", srv, "--gpu", "none")
	const name = "sim/replica-1"
	var down, upAgain bool
	var trace []string // replica-1's states as the frames had them, for a failure
	last := ""
	deadline := time.Now().Add(2 * time.Minute)
	for fr := range hb.Frames() {
		for _, ev := range diagnose.Timeline(fr, name) {
			if ev.Kind == diagnose.EventLeft {
				t.Fatalf("%s left at %s: a restart read as a departure", name, ev.Time.Format(time.TimeOnly))
			}
		}
		for _, e := range fr.Endpoints {
			if e.Name != name {
				continue
			}
			if st := e.State.String() + " " + e.LastError; st != last {
				trace = append(trace, fr.Time.Format(time.TimeOnly)+" "+st)
				last = st
			}
			switch {
			case e.State == diagnose.StateDown:
				if !down {
					t.Logf("down at %s: %s", fr.Time.Format(time.TimeOnly), e.LastError)
				}
				down = true
			case down && e.State == diagnose.StateUp && len(e.Restarts) > 0:
				upAgain = true
			}
		}
		if upAgain || time.Now().After(deadline) {
			break
		}
	}
	if !down || !upAgain {
		t.Errorf("%s: down %v, up again with its restart %v (in 2 minutes); its states:\n%s", name, down, upAgain, strings.Join(trace, "\n"))
	}
}

// A server that answers but has scraped nothing lately (a Prometheus just
// continued after a stop, before its scrape loops run; one whose clock
// lags this host's) holds only old samples: that is the server behind,
// said as its failing, not every replica departing. Before, each replica
// left and joined again, which is how TestE2EPrometheusOutage once ended
// with "+ joined" instead of "● up" after SIGCONT. Here the lag is made
// exactly, by reading a minute ahead of the server, through both the
// query API and /federate (which reads "now", so only the query API can
// be moved; the federated read is checked through the outage test).
func TestPrometheusBehindIsNotDeparture(t *testing.T) {
	target := movingServer(t, "llama-behind")
	srv := startPrometheus(t, nil, "scrape_configs:\n  - job_name: vllm\n    static_configs:\n      - targets: ['"+target+"']\n")
	waitSeries(t, srv, 1)
	var ahead atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := promapi.Open(ctx, promapi.Config{URL: srv, Clock: clock, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan sources.Batch, 16)
	done := make(chan struct{})
	go func() {
		promapi.NewSource(cl).Run(ctx, out)
		close(done)
	}()
	defer func() { cancel(); <-done }()
	// watch reads batches for d; any departure or second arrival fails.
	arrived := 0
	watch := func(d time.Duration, until func(sources.Batch) bool) bool {
		t.Helper()
		deadline := time.After(d)
		for {
			select {
			case b := <-out:
				if len(b.Departed) > 0 {
					t.Fatalf("departed %v at %s (ahead %s): a server behind read as the fleet leaving", b.Departed, b.Now.Format(time.TimeOnly), time.Duration(ahead.Load()))
				}
				arrived += len(b.Arrived)
				if arrived > 1 {
					t.Fatalf("arrived again at %s: %v", b.Now.Format(time.TimeOnly), b.Arrived)
				}
				if until(b) {
					return true
				}
			case <-deadline:
				return false
			}
		}
	}
	fresh := func(b sources.Batch) bool {
		for _, s := range b.Scrapes {
			if s.Err == nil {
				return true
			}
		}
		return false
	}
	if !watch(20*time.Second, fresh) {
		t.Fatal("no scrape through the server in 20 s")
	}
	ahead.Store(int64(time.Minute))
	var said string
	if !watch(20*time.Second, func(b sources.Batch) bool {
		for _, p := range b.Problems {
			if p.Text != "" && p.Feeds {
				said = p.Key + ": " + p.Text
				return true
			}
		}
		return false
	}) {
		t.Fatal("a server a minute behind: no failing said in 20 s")
	}
	if !strings.Contains(said, "newest sample is") || !strings.Contains(said, "not scraping") {
		t.Errorf("the server's error: %q", said)
	}
	// It stays behind a while: still nobody departs.
	watch(5*time.Second, func(sources.Batch) bool { return false })
	ahead.Store(0)
	cleared := false
	if !watch(20*time.Second, func(b sources.Batch) bool {
		for _, p := range b.Problems {
			if p.Text == "" {
				cleared = true
			}
		}
		return cleared && fresh(b)
	}) {
		t.Fatalf("back in step: cleared %v, no fresh scrape in 20 s", cleared)
	}
	// The grace after it answers again is over: still the same replica.
	watch(8*time.Second, func(sources.Batch) bool { return false })
}
