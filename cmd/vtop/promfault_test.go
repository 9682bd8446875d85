package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// faultProxy passes requests to a real server, answering the first
// failFirst range queries (all of them when failFirst < 0) with 503 and
// Retry-After: 1; it remembers when each range query came.
type faultProxy struct {
	mu        sync.Mutex
	failFirst int
	ranges    []time.Time
}

func (f *faultProxy) start(t *testing.T, target string) string {
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/query_range") {
			f.mu.Lock()
			f.ranges = append(f.ranges, time.Now())
			fail := f.failFirst < 0 || len(f.ranges) <= f.failFirst
			f.mu.Unlock()
			if fail {
				w.Header().Set("Retry-After", "1")
				http.Error(w, `{"status":"error","errorType":"unavailable","error":"overloaded"}`, http.StatusServiceUnavailable)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type promReport struct {
	GeneratedAt time.Time `json:"generated_at"`
	Problems    []string  `json:"problems"`
	Fleet       struct {
		Up, Total int
	} `json:"fleet"`
}

// TestPrometheusBackfillRetries: a 503 with Retry-After on the backfill's
// range queries is asked again after the wait the server asked for, and
// the backfill completes; a chunk that keeps failing leaves a gap said as
// a problem, and the live refresh reads the fleet regardless (it ended
// the run: an empty report dated 0001-01-01, exit 3, no reason).
func TestPrometheusBackfillRetries(t *testing.T) {
	srv := promWithDCGM(t)
	time.Sleep(2 * time.Second) // a few scrapes of history
	flaky := &faultProxy{failFirst: 1}
	code, out, errOut := runArgs(t, envFor(t), "--once", "-o", "json", "--gpu", "none", "--prometheus", flaky.start(t, srv), "--backfill", "30s")
	var rep promReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code == 3 || rep.Fleet.Total != 2 || len(rep.Problems) != 0 {
		t.Fatalf("one 503: exit %d, stderr %q, %+v (%v)\n%.1500s", code, errOut, rep, err, out)
	}
	if len(flaky.ranges) < 2 || flaky.ranges[1].Sub(flaky.ranges[0]) < 900*time.Millisecond {
		t.Errorf("the retry came %v after the 503 that asked for 1 s", flaky.ranges[1].Sub(flaky.ranges[0]))
	}
	down := &faultProxy{failFirst: -1}
	code, out, errOut = runArgs(t, envFor(t), "--once", "-o", "json", "--gpu", "none", "--prometheus", down.start(t, srv), "--backfill", "30s")
	rep = promReport{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Fleet.Up != 2 || rep.GeneratedAt.Year() < 2000 {
		t.Fatalf("range queries down: exit %d, stderr %q, %+v (%v)\n%.1500s", code, errOut, rep, err, out)
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "backfill: history from") || !strings.Contains(rep.Problems[0], "the gap stays") ||
		!strings.Contains(rep.Problems[0], "overloaded") {
		t.Errorf("problems %q", rep.Problems)
	}
	if len(down.ranges) != 3 {
		t.Errorf("%d range queries for one chunk, want 3 tries", len(down.ranges))
	}
}

// TestPrometheusFirstFrameAtOnce: with a long scrape interval (the hub
// publishes every interval: 4 minutes here, as on a server scraping every
// 4 minutes) the first frame is published as soon as the first refresh
// is in, not an interval later ("waiting for the first poll…").
func TestPrometheusFirstFrameAtOnce(t *testing.T) {
	srv := promWithDCGM(t)
	hb, _ := startHubEvery(t, 4*time.Minute, "--prometheus", srv, "--gpu", "none")
	select {
	case fr := <-hb.Frames():
		// The replicas the first refresh read (which of the two had a
		// scrape by then is the server's timing).
		if len(fr.Endpoints) == 0 {
			t.Errorf("first frame: no endpoint")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no frame 30 s after opening, with frames published every 4 minutes")
	}
}
