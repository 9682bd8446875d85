package sim_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

// fakeClock is a wall clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func serve(t *testing.T, cfg sim.FleetConfig, clock func() time.Time) (*sim.Fleet, *sim.Server) {
	t.Helper()
	f, err := sim.NewFleet(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.Serve(f, sim.ServeConfig{Host: "127.0.0.1", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return f, srv
}

func get(t *testing.T, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// The HTTP endpoints answer like prometheus_client behind vLLM: text by
// default, OpenMetrics when asked, gzip when accepted.
func TestServeNegotiates(t *testing.T) {
	clock := &fakeClock{t: sim.DefaultEpoch}
	_, srv := serve(t, sim.FleetConfig{Replicas: []sim.ReplicaConfig{{}, {DP: 2}}}, clock.now)
	clock.set(sim.DefaultEpoch.Add(time.Minute))
	url := srv.URLs()[1]

	resp, text := get(t, url)
	if ct := resp.Header.Get("Content-Type"); ct != sim.FormatText.ContentType() || !bytes.Contains(text, []byte("# TYPE vllm:prompt_tokens_total counter\n")) {
		t.Fatalf("plain GET: %s\n%.300s", ct, text)
	}
	resp, om := get(t, url, "Accept", "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;q=0.2")
	if ct := resp.Header.Get("Content-Type"); ct != sim.FormatOpenMetrics.ContentType() || !bytes.HasSuffix(om, []byte("# EOF\n")) {
		t.Fatalf("OpenMetrics GET: %s", ct)
	}
	resp, zipped := get(t, url, "Accept-Encoding", "gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatal("no gzip")
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, _ := io.ReadAll(zr)
	// The clock did not move: the same model state, byte for byte.
	if !bytes.Equal(unzipped, text) {
		t.Fatal("gzip body differs from the plain one at the same simulated time")
	}
	if resp, b := get(t, strings.TrimSuffix(url, "/metrics")+"/version"); resp.StatusCode != 200 || string(b) != `{"version":"0.20.2"}` {
		t.Fatalf("/version: %d %s", resp.StatusCode, b)
	}
	if resp, _ := get(t, strings.TrimSuffix(url, "/metrics")+"/v1/nothing"); resp.StatusCode != 404 {
		t.Fatalf("unknown path: %d", resp.StatusCode)
	}
}

// vtop's own fetcher and normalizer read the served fleet; an endpoint
// that flaps refuses connections in its down windows and comes back.
func TestServeFlapsForTheFetcher(t *testing.T) {
	epoch := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: epoch}
	_, srv := serve(t, sim.FleetConfig{Replicas: []sim.ReplicaConfig{
		{}, {Scenarios: []sim.ScenarioSpec{{Name: "flapping", Delay: 10 * time.Second}}},
	}}, clock.now)
	fetcher, err := sources.NewFetcher(sources.HTTPConfig{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	scrape := func(i int) error {
		var buf bytes.Buffer
		body, ct, err := fetcher.Fetch(context.Background(), srv.URLs()[i], &buf)
		if err != nil {
			return err
		}
		snap, err := sources.NewNormalizer().Normalize(body, ct)
		if err != nil {
			return err
		}
		if len(snap.Warnings) > 0 || !snap.Version.Contains(sources.V(0, 20, 2)) {
			t.Fatalf("snapshot %v warnings %v", snap.Version, snap.Warnings)
		}
		return nil
	}
	for _, step := range []struct {
		at   time.Duration
		down bool
	}{{5 * time.Second, false}, {15 * time.Second, true}, {29 * time.Second, true}, {31 * time.Second, false}, {75 * time.Second, true}} {
		clock.set(epoch.Add(step.at))
		srv.Sync()
		err := scrape(1)
		if step.down != (err != nil) {
			t.Fatalf("at %v: err %v, want down=%v", step.at, err, step.down)
		}
		if step.down && !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("at %v: %v", step.at, err)
		}
		if err := scrape(0); err != nil {
			t.Fatalf("the steady replica at %v: %v", step.at, err)
		}
	}
}

// While a replica is down its port refuses connections, as a restarting
// vLLM's does, but stays the replica's: no other server on the host is
// handed it (an ephemeral listener in another test took a restarting
// replica's port once and answered Prometheus in its name for minutes),
// and the replica has it back when it comes up.
func TestServeDownPortStaysTheReplicas(t *testing.T) {
	epoch := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: epoch}
	_, srv := serve(t, sim.FleetConfig{Replicas: []sim.ReplicaConfig{
		{Scenarios: []sim.ScenarioSpec{{Name: "restart", Delay: 10 * time.Second}}},
	}}, clock.now)
	u, _ := url.Parse(srv.URLs()[0])
	clock.set(epoch.Add(15 * time.Second))
	srv.Sync()
	if c, err := net.Dial("tcp", u.Host); err == nil {
		c.Close()
		t.Fatalf("%s accepts while the replica restarts", u.Host)
	} else if !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("while down: %v, want connection refused", err)
	}
	// Bound, so the kernel hands the port to no listener asking for
	// port 0 (how every test server and sim takes one); a socket without
	// SO_REUSEADDR cannot bind it at all.
	if fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0); err == nil {
		sa := &syscall.SockaddrInet4{Port: mustPort(t, u.Port())}
		copy(sa.Addr[:], net.ParseIP(u.Hostname()).To4())
		err := syscall.Bind(fd, sa)
		syscall.Close(fd)
		if err == nil {
			t.Fatalf("the down replica's %s is free for any server to take", u.Host)
		}
	}
	clock.set(epoch.Add(45 * time.Second))
	srv.Sync()
	if resp, _ := get(t, srv.URLs()[0]); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the restart: %s", resp.Status)
	}
}

func mustPort(t *testing.T, s string) int {
	t.Helper()
	p, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestServeLoopbackOnly(t *testing.T) {
	f, err := sim.NewFleet(one(sim.ReplicaConfig{}), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"0.0.0.0", "::", "192.168.1.10", "example.com", ""} {
		if srv, err := sim.Serve(f, sim.ServeConfig{Host: host}); err == nil {
			srv.Close()
			t.Errorf("served on %q", host)
		}
	}
	srv, err := sim.Serve(f, sim.ServeConfig{Host: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if u := srv.URLs()[0]; !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("localhost served at %s", u)
	}
}

func TestServeSummary(t *testing.T) {
	f, err := sim.NewFleet(sim.FleetConfig{Replicas: make([]sim.ReplicaConfig, 4)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.Serve(f, sim.ServeConfig{Host: "127.0.0.1", BasePort: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s := srv.Summary()
	if !strings.HasPrefix(s, "http://127.0.0.1:{") || !strings.HasSuffix(s, "}/metrics") {
		t.Fatalf("summary %q", s)
	}
	// Expanded, the summary is the URLs in fleet order: the kernel hands
	// ephemeral ports in no order, and a reader maps the n-th scenario
	// to the n-th port.
	var got []string
	for _, p := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(s, "http://127.0.0.1:{"), "}/metrics"), ",") {
		lo, hi, ok := strings.Cut(p, "..")
		if !ok {
			hi = lo
		}
		for port := mustPort(t, lo); port <= mustPort(t, hi); port++ {
			got = append(got, "http://127.0.0.1:"+strconv.Itoa(port)+"/metrics")
		}
	}
	if strings.Join(got, " ") != strings.Join(srv.URLs(), " ") {
		t.Fatalf("summary %q expands to %v, the fleet's URLs are %v", s, got, srv.URLs())
	}
}

// The real poller against the served fleet at real time, briefly: every
// endpoint is seen up with engine data.
func TestServeToPoller(t *testing.T) {
	f, err := sim.NewFleet(sim.FleetConfig{Replicas: []sim.ReplicaConfig{{}, {DP: 2}, {Profile: "v0.6"}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	f.Advance(30 * time.Second) // history before serving, like the demo's warm-up
	srv, err := sim.Serve(f, sim.ServeConfig{Host: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if d := time.Since(f.Epoch()); d < 29*time.Second || d > 31*time.Second {
		t.Fatalf("served fleet's epoch is %v ago, want its 30 s of history", d)
	}
	var targets []sources.Target
	var infos []diagnose.TargetInfo
	for _, u := range srv.URLs() {
		tg, err := sources.ParseTarget(u)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tg)
		infos = append(infos, diagnose.TargetInfo{Name: tg.Name})
	}
	fetcher, _ := sources.NewFetcher(sources.HTTPConfig{})
	cfg := sources.DefaultPollerConfig()
	cfg.Interval = 200 * time.Millisecond
	poller := sources.NewPoller(targets, fetcher, cfg)
	engine := diagnose.New(diagnose.Config{Interval: cfg.Interval, Window: time.Second}, infos)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	done := make(chan struct{})
	go func() { poller.Run(ctx); close(done) }()
	<-done
	for _, s := range poller.Mailbox().Take(nil) {
		engine.Ingest(s.Index, s.Scrape)
	}
	fr := engine.Frame(time.Now())
	for i, e := range fr.Endpoints {
		if e.State != diagnose.StateUp || e.Kind != sources.KindEngine || len(e.Warnings) > 0 || e.Stats.Engines != f.Replicas()[i].Config().DP {
			t.Errorf("%s: %v %v engines %d warnings %v err %q", e.Name, e.State, e.Kind, e.Stats.Engines, e.Warnings, e.LastError)
		}
	}
}
