package dcgm

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// TestValueRanges: values no GPU can report are unknown, not shown or
// acted on (an XID of 79.5 is no "fallen off the bus"), and the reading
// says how many it ignored, naming the first.
func TestValueRanges(t *testing.T) {
	r := NewReader()
	r.Begin()
	l := `{gpu="0",UUID="GPU-1",Hostname="n1"}`
	r.ParseText([]byte("DCGM_FI_DEV_XID_ERRORS"+l+" 79.5\n"+
		"DCGM_FI_DEV_GPU_UTIL"+l+" 200\n"+
		"DCGM_FI_DEV_GPU_TEMP"+l+" -273\n"+
		"DCGM_FI_DEV_FB_USED"+l+" -5\n"+
		"DCGM_FI_DEV_FB_FREE"+l+" 100\n"+
		"DCGM_FI_DEV_POWER_USAGE"+l+" +Inf\n"+
		"DCGM_FI_DEV_SM_CLOCK"+l+" 1410\n"), "h")
	devs, ev := r.End(time.Unix(0, 0))
	if len(devs) != 1 || len(ev) != 0 {
		t.Fatalf("devices %+v, events %+v", devs, ev)
	}
	g := devs[0].GPU
	for name, v := range map[string]float64{"util": g.UtilGPU, "temp": g.TempC, "mem used": g.MemUsed, "power": g.PowerW} {
		if !math.IsNaN(v) {
			t.Errorf("%s %v, want unknown", name, v)
		}
	}
	if g.SMClockMHz != 1410 {
		t.Errorf("a good value lost: SM clock %v", g.SMClockMHz)
	}
	if note := r.Refused(); !strings.Contains(note, "5 values out of range") || !strings.Contains(note, "DCGM_FI_DEV_XID_ERRORS 79.5") {
		t.Errorf("note %q", note)
	}
}

// TestDeviceBound: one reading keeps at most MaxDevices GPUs and says how
// many it left out; the XID codes kept between readings are those of the
// devices last seen, so a storm of one-off UUIDs leaves nothing behind.
func TestDeviceBound(t *testing.T) {
	r := NewReader()
	reading := func(first, n int) []Device {
		var b strings.Builder
		for i := first; i < first+n; i++ {
			fmt.Fprintf(&b, "DCGM_FI_DEV_XID_ERRORS{gpu=\"0\",UUID=\"GPU-%d\",Hostname=\"n\"} 13\n", i)
		}
		r.Begin()
		r.ParseText([]byte(b.String()), "h")
		devs, _ := r.End(time.Unix(0, 0))
		return devs
	}
	if devs := reading(0, MaxDevices+500); len(devs) != MaxDevices || !strings.Contains(r.Refused(), "500 left out") {
		t.Errorf("%d devices, note %q", len(devs), r.Refused())
	}
	for k := 1; k <= 5; k++ {
		reading(k*100_000, 1000)
	}
	if len(r.lastXID) != 1000 {
		t.Errorf("%d XID codes kept after readings of 1,000 new GPUs each", len(r.lastXID))
	}
}

// TestMIGInstanceSanitized: the MIG instance label reaches the reading
// escaped, as every other label does.
func TestMIGInstanceSanitized(t *testing.T) {
	r := NewReader()
	r.Begin()
	r.ParseText([]byte("DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",UUID=\"GPU-1\",GPU_I_ID=\"1\\u001b]52;c;eA==\\u0007\",GPU_I_PROFILE=\"1g.10gb\"} 0.5\n"), "h")
	r.Add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", func(l string) string {
		return map[string]string{"UUID": "GPU-2", "GPU_I_ID": "2\x1b]52;c;eA==\x07"}[l]
	}, 0.5, "h")
	devs, _ := r.End(time.Unix(0, 0))
	for _, d := range devs {
		if sources.Sanitize(d.Instance, 0) != d.Instance || d.Instance == "" {
			t.Errorf("instance %q", d.Instance)
		}
	}
}

// TestScraperHungExporter: exporters are read together, so hung ones
// cost one timeout, not one each, before the healthy one's GPUs arrive;
// a failing exporter is named with its URL's query values redacted.
func TestScraperHungExporter(t *testing.T) {
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-1\"} 42\n")
	}))
	defer good.Close()
	hang := make(chan struct{})
	defer close(hang)
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer hung.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	f, err := sources.NewFetcher(sources.HTTPConfig{Timeout: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	urls := []string{hung.URL + "/a?key=s3cret", hung.URL + "/b", hung.URL + "/c", hung.URL + "/d", "http://" + closed + "/metrics?key=s3cret", good.URL}
	tg, _ := sources.ParseTarget("127.0.0.1:8000") // on the exporters' host: holds its GPUs
	s := &Scraper{URLs: urls, Fetcher: f, Interval: time.Hour, Targets: []sources.Target{tg}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan sources.Batch, 1)
	start := time.Now()
	go s.Run(ctx, out)
	b := <-out
	took := time.Since(start)
	if took > 1200*time.Millisecond {
		t.Errorf("the reading took %s with four exporters hung for 400 ms each", took)
	}
	if b.GPU == nil || len(b.GPU.GPUs) != 1 || b.GPU.GPUs[0].UtilGPU != 42 {
		t.Fatalf("reading %+v", b.GPU)
	}
	notes := strings.Join(b.GPU.Notes, "\n")
	if strings.Contains(notes, "s3cret") || !strings.Contains(notes, "key="+sources.Redacted) || len(b.GPU.Notes) != 5 {
		t.Errorf("notes:\n%s", notes)
	}
	// Each exporter that fails is a source failing, named by its redacted
	// URL (by its address alone at the usual /metrics), once.
	fails := map[string]string{}
	for _, p := range b.Problems {
		if p.Fails {
			fails[p.Key] = p.Text
		}
	}
	if len(fails) != 5 || !strings.Contains(fails["dcgm-exporter "+sources.ShowURL("http://"+closed+"/metrics?key=s3cret")], "refused (is dcgm-exporter running") ||
		fails["dcgm-exporter "+sources.ShowURL(hung.URL+"/b")] == "" || strings.Contains(fmt.Sprint(fails), "s3cret") {
		t.Errorf("problems %q", fails)
	}
}

// With discovery, the exporter's GPUs are joined to the targets polled
// now (Found), not only those named by hand: a target found on the
// exporter's host holds its GPU; once it is gone, nobody does.
func TestScraperJoinsFoundTargets(t *testing.T) {
	exp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "DCGM_FI_DEV_GPU_UTIL{gpu=\"3\",UUID=\"GPU-3\"} 42\n")
	}))
	defer exp.Close()
	f, err := sources.NewFetcher(sources.HTTPConfig{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	found := &sources.TargetList{}
	tg, _ := sources.ParseTarget("127.0.0.1:8000")
	found.Set([]sources.Target{tg})
	s := &Scraper{URLs: []string{exp.URL}, Fetcher: f, Interval: 50 * time.Millisecond, Found: found}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan sources.Batch)
	go s.Run(ctx, out)
	b := <-out
	if b.GPU == nil || len(b.GPU.GPUs) != 1 || len(b.Procs) != 1 || b.Procs[0].Target != tg.Name || len(b.Procs[0].Tree.GPUs) != 1 {
		t.Fatalf("found target: GPU %+v procs %+v", b.GPU, b.Procs)
	}
	found.Set(nil)
	for i := 0; i < 3; i++ { // a reading may have begun before the change
		b = <-out
	}
	if len(b.Procs) != 0 {
		t.Errorf("a departed target still holds GPUs: %+v", b.Procs)
	}
}

// An exporter that stops answering leaves its GPUs in the readings, stale
// with the values last read (never dropped, never zero); when it answers
// again they are fresh; after StaleFor of failing they are dropped.
func TestScraperFailingExporterStale(t *testing.T) {
	var util atomic.Int64
	util.Store(42)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-1\"} %d\nDCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-1\"} 1000\nDCGM_FI_DEV_XID_ERRORS{gpu=\"0\",UUID=\"GPU-1\"} 79\n", util.Load())
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	f, err := sources.NewFetcher(sources.HTTPConfig{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tg, _ := sources.ParseTarget("127.0.0.1:8000")
	s := &Scraper{URLs: []string{"http://" + addr + "/metrics"}, Fetcher: f, Interval: 30 * time.Millisecond, Targets: []sources.Target{tg}, StaleFor: 2 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan sources.Batch)
	go s.Run(ctx, out)
	// next waits for a reading that passes ok.
	next := func(what string, ok func(b sources.Batch) bool) sources.Batch {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case b := <-out:
				if ok(b) {
					return b
				}
			case <-deadline:
				t.Fatalf("no reading with %s", what)
			}
		}
	}
	b := next("the GPU fresh", func(b sources.Batch) bool { return b.GPU != nil && len(b.GPU.GPUs) == 1 })
	if g := b.GPU.GPUs[0]; g.Stale || g.UtilGPU != 42 || len(b.GPU.Events) != 1 {
		t.Fatalf("answering: %+v, events %v", g, b.GPU.Events)
	}
	srv.Close() // the exporter goes away: connections are refused
	util.Store(7)
	b = next("the exporter failing", func(b sources.Batch) bool { return len(b.GPU.Notes) > 0 })
	if len(b.GPU.GPUs) != 1 || b.GPU.Unavailable != "" {
		t.Fatalf("failing: GPUs dropped: %+v", b.GPU)
	}
	g := b.GPU.GPUs[0]
	if !g.Stale || g.UtilGPU != 42 || g.MemUsed != 1000<<20 || g.UUID != "GPU-1" {
		t.Errorf("failing: not stale with the last values: %+v", g)
	}
	if len(b.Procs) != 1 || len(b.Procs[0].Tree.GPUs) != 1 {
		t.Errorf("failing: the endpoint no longer holds its stale GPU: %+v", b.Procs)
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	srv = &http.Server{Handler: h}
	go srv.Serve(ln)
	b = next("the exporter back", func(b sources.Batch) bool { return len(b.GPU.Notes) == 0 })
	if len(b.GPU.GPUs) != 1 || b.GPU.GPUs[0].Stale || b.GPU.GPUs[0].UtilGPU != 7 {
		t.Errorf("answering again: %+v", b.GPU.GPUs)
	}
	// The XID it reported before the outage is no new event.
	if len(b.GPU.Events) != 0 {
		t.Errorf("answering again: XID events %v", b.GPU.Events)
	}
	srv.Close()
	b = next("the stale GPU dropped after StaleFor", func(b sources.Batch) bool { return len(b.GPU.GPUs) == 0 })
	if b.GPU.Unavailable == "" {
		t.Errorf("every exporter failing with nothing left to show: no reason given: %+v", b.GPU)
	}
}
