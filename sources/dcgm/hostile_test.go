package dcgm

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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
