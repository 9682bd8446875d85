package sources

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// concurrency counts requests in flight and the most seen at once.
type concurrency struct {
	now, peak atomic.Int32
	total     atomic.Int32
}

func (c *concurrency) handler(delay time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n := c.now.Add(1)
		defer c.now.Add(-1)
		c.total.Add(1)
		for {
			p := c.peak.Load()
			if n <= p || c.peak.CompareAndSwap(p, n) {
				break
			}
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "vllm:num_requests_running{model_name=\"m\"} 1\n")
	}
}

func runPoller(t *testing.T, targets []Target, cfg PollerConfig, d time.Duration) *Poller {
	t.Helper()
	f, _ := NewFetcher(HTTPConfig{Timeout: 2 * time.Second})
	p := NewPoller(targets, f, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	p.Run(ctx)
	return p
}

// TestNoOverlappingPolls: a target slower than the interval is polled one
// request at a time.
func TestNoOverlappingPolls(t *testing.T) {
	var c concurrency
	url := serve(t, c.handler(250*time.Millisecond))
	cfg := DefaultPollerConfig()
	cfg.Interval = 50 * time.Millisecond
	runPoller(t, []Target{{Name: "slow", URL: url}}, cfg, time.Second)
	if c.peak.Load() != 1 || c.total.Load() < 2 {
		t.Errorf("peak %d concurrent polls of one target (total %d)", c.peak.Load(), c.total.Load())
	}
}

// TestParallelismBound: many slow targets, at most MaxParallel scrapes at
// once. Each 100 ms scrape is well inside its fair share of the slots
// (2 s × 3 / 12 = 500 ms), so none gives its slot back early.
func TestParallelismBound(t *testing.T) {
	var c concurrency
	url := serve(t, c.handler(100*time.Millisecond))
	var targets []Target
	for i := 0; i < 12; i++ {
		targets = append(targets, Target{Name: fmt.Sprint(i), URL: fmt.Sprintf("%s?t=%d", url, i)})
	}
	cfg := DefaultPollerConfig()
	cfg.Interval, cfg.MaxParallel = 2*time.Second, 3
	runPoller(t, targets, cfg, 1500*time.Millisecond)
	if c.peak.Load() > 3 || c.peak.Load() < 2 {
		t.Errorf("peak concurrency %d with MaxParallel 3", c.peak.Load())
	}
}

// TestPollNow: "r" in the UI polls every target at once, even mid-interval
// or in backoff.
func TestPollNow(t *testing.T) {
	var c concurrency
	url := serve(t, c.handler(0))
	f, _ := NewFetcher(HTTPConfig{})
	cfg := DefaultPollerConfig()
	cfg.Interval = time.Hour
	p := NewPoller([]Target{{Name: "a", URL: url}, {Name: "b", URL: url + "?b"}}, f, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	waitTotal := func(n int32) {
		deadline := time.Now().Add(3 * time.Second)
		for c.total.Load() < n && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if c.total.Load() < n {
			t.Fatalf("%d polls, want %d", c.total.Load(), n)
		}
	}
	waitTotal(2) // first polls start within a second, whatever the interval
	p.PollNow()
	waitTotal(4)
}

func TestRouterDetected(t *testing.T) {
	body := `vllm:current_qps{server="http://engine-0:8000"} 12.5
vllm:healthy_pods_total{server="http://engine-0:8000"} 1
vllm:num_incoming_requests_total{server="http://engine-0:8000"} 100
vllm:gpu_cache_usage_perc{server="http://engine-0:8000"} 0.4
`
	s, err := norm(t, body)
	if err != nil || s.Kind != KindRouter {
		t.Fatalf("router: %v %v", err, s)
	}
}

// tlsFiles writes the test server's CA and a client certificate it trusts.
func tlsFiles(t *testing.T, srv *httptest.Server) (ca, cert, key string) {
	dir := t.TempDir()
	ca = filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)
	// httptest's server certificate doubles as a client certificate signed by
	// a CA the server is told to trust.
	c := srv.TLS.Certificates[0]
	cert = filepath.Join(dir, "client.pem")
	key = filepath.Join(dir, "client.key")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600)
	kb, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600)
	return
}

func TestTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "client certificate required", http.StatusForbidden)
			return
		}
		fmt.Fprint(w, "vllm:num_requests_running{model_name=\"m\"} 1\n")
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	defer srv.Close()
	ca, cert, key := tlsFiles(t, srv)
	url := srv.URL + "/metrics"
	fetch := func(cfg HTTPConfig) error {
		f, err := NewFetcher(cfg)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		_, _, err = f.Fetch(context.Background(), url, &buf)
		return err
	}
	if err := fetch(HTTPConfig{}); err == nil || !strings.Contains(err.Error(), "TLS certificate not trusted (use --ca-file") {
		t.Errorf("untrusted: %v", err)
	}
	if err := fetch(HTTPConfig{CAFile: ca}); err == nil || !strings.Contains(err.Error(), "HTTP 403") {
		t.Errorf("CA without client cert: %v", err)
	}
	if err := fetch(HTTPConfig{CAFile: ca, CertFile: cert, KeyFile: key}); err != nil {
		t.Errorf("CA + client cert: %v", err)
	}
	if err := fetch(HTTPConfig{InsecureSkipVerify: true, CertFile: cert, KeyFile: key}); err != nil {
		t.Errorf("insecure: %v", err)
	}
	if _, err := NewFetcher(HTTPConfig{CAFile: key}); err == nil || !strings.Contains(err.Error(), "no PEM certificates") {
		t.Errorf("bad CA file: %v", err)
	}
}

// TestMailboxNewestWins: a slow consumer sees the newest result of each
// target, never a backlog.
func TestMailboxNewestWins(t *testing.T) {
	m := NewMailbox(2)
	for i := 0; i < 5; i++ {
		m.Put(0, 0, Scrape{Target: fmt.Sprint(i)})
	}
	m.Put(1, 0, Scrape{Target: "b"})
	got := m.Take(nil)
	if len(got) != 2 || got[0].Target != "4" || got[1].Target != "b" {
		t.Errorf("took %+v", got)
	}
	if len(m.Take(nil)) != 0 {
		t.Error("results taken twice")
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); m.Put(i%2, 0, Scrape{}) }()
	}
	wg.Wait()
	<-m.Ready()
	if len(m.Take(nil)) != 2 {
		t.Error("concurrent puts lost")
	}
}

// TestPollNowDuringScrape: "r" pressed while a target's scrape is in flight
// is not lost: the target polls again as soon as that scrape ends.
func TestPollNowDuringScrape(t *testing.T) {
	var c concurrency
	url := serve(t, c.handler(300*time.Millisecond))
	f, _ := NewFetcher(HTTPConfig{Timeout: 2 * time.Second})
	cfg := DefaultPollerConfig()
	cfg.Interval = time.Hour
	p := NewPoller([]Target{{Name: "a", URL: url}}, f, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	deadline := time.Now().Add(3 * time.Second)
	for c.now.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if c.now.Load() != 1 {
		t.Fatal("first scrape never started")
	}
	p.PollNow() // while the first scrape is still being served
	for c.total.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if c.total.Load() < 2 {
		t.Errorf("poll-now during a scrape was lost (%d polls)", c.total.Load())
	}
}

// TestHungTargetsDoNotStarve: 700 targets that never answer beside one
// healthy target. Each hung scrape gives its shared slot back after its fair
// share, so the healthy target keeps (most of) its interval instead of
// queueing behind hung scrapes that hold every slot for the full timeout.
func TestHungTargetsDoNotStarve(t *testing.T) {
	if testing.Short() {
		t.Skip("700 connections")
	}
	stop := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(hung.Close)
	t.Cleanup(func() { close(stop) })
	var good concurrency
	targets := []Target{{Name: "good", URL: serve(t, good.handler(0))}}
	for i := 0; i < 700; i++ {
		targets = append(targets, Target{Name: fmt.Sprint("hung", i), URL: fmt.Sprintf("%s/metrics?t=%d", hung.URL, i)})
	}
	cfg := DefaultPollerConfig()
	cfg.Interval, cfg.MaxParallel = 200*time.Millisecond, 8
	f, _ := NewFetcher(HTTPConfig{Timeout: 2 * time.Second})
	p := NewPoller(targets, f, cfg)
	// Five polls, which take 1 s at the interval, within 30 s: without
	// fairness the 700 scrapes ahead of it hold the 8 slots for 2 s each,
	// so the healthy target waits ~175 s between polls; with it, even a
	// loaded 2-core machine under -race polls it within a few seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	for good.total.Load() < 5 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if n := good.total.Load(); n < 5 {
		t.Errorf("healthy target polled %d times in 30 s beside 700 hung ones (interval 200ms), want ≥ 5", n)
	}
}

// TestWaitNotAddedToInterval: a poll that waited for a slot (or for its
// timer, on a busy machine) does not push every later poll back by that
// wait: the next is due an interval after this one was due. Counted from
// the scrape's start, a 300 ms wait for the one slot moved the second
// poll to 300 + 400 ms; now it is due at 400 ms.
func TestWaitNotAddedToInterval(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		fmt.Fprint(w, "vllm:num_requests_running{model_name=\"m\"} 1\n")
	})
	cfg := DefaultPollerConfig()
	cfg.Interval, cfg.MaxParallel = 400*time.Millisecond, 1
	f, _ := NewFetcher(HTTPConfig{Timeout: 2 * time.Second})
	p := NewPoller([]Target{{Name: "a", URL: url}}, f, cfg)
	p.sem <- struct{}{} // the one slot, busy for the first 300 ms
	go func() {
		time.Sleep(300 * time.Millisecond)
		<-p.sem
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	p.Run(ctx)
	mu.Lock()
	defer mu.Unlock()
	if len(at) < 2 {
		t.Fatalf("%d polls", len(at))
	}
	if gap := at[1].Sub(at[0]); gap > 300*time.Millisecond {
		t.Errorf("the second poll came %v after the first, which waited 300 ms for its slot: the wait was added to the 400 ms interval", gap)
	}
}

func TestNextDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	for _, c := range []struct {
		due, woke time.Time
		want      time.Time
	}{
		{t0, t0, t0.Add(time.Second)},               // on time
		{t0, t0.Add(40 * ms), t0.Add(time.Second)},  // woke late: still due a second after it was due
		{t0, t0.Add(1500 * ms), t0.Add(2500 * ms)},  // more than an interval late: counted from waking
		{t0.Add(500 * ms), t0, t0.Add(time.Second)}, // poll now, before it was due
	} {
		if got := nextDue(c.due, c.woke, time.Second); !got.Equal(c.want) {
			t.Errorf("nextDue(%v, %v) = %v, want %v", c.due.Sub(t0), c.woke.Sub(t0), got.Sub(t0), c.want.Sub(t0))
		}
	}
}
