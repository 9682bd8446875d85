package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/app"
)

// An export of a recording is accepted by promtool's backfill, and a real
// Prometheus started on the blocks computes the same TTFT p95 as vtop's
// replay at the same instant, from the same bucket counts.
func TestExportIntoPrometheus(t *testing.T) {
	promtool, err1 := exec.LookPath("promtool")
	prom, err2 := exec.LookPath("prometheus")
	if err1 != nil || err2 != nil {
		t.Skip("promtool/prometheus not installed (.ci/run installs the Debian package)")
	}
	rec := filepath.Join("testdata", "replay", "kv-thrashing.vtop")
	dir := t.TempDir()
	om := filepath.Join(dir, "incident.om")
	if code, _, errOut := runArgs(t, nil, "export", "--format", "openmetrics", "-o", om, rec); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	data := filepath.Join(dir, "data")
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, data).CombinedOutput(); err != nil {
		t.Fatalf("promtool rejected the export: %v\n%s", err, out)
	}
	// Typed families (a counter without its _total), and the GPU readings.
	omText, _ := os.ReadFile(om)
	for _, want := range []string{"# TYPE vllm:time_to_first_token_seconds histogram\n", "# HELP vllm:time_to_first_token_seconds ",
		"# TYPE vllm:prompt_tokens counter\n", "# TYPE vtop_gpu_utilization_percent gauge\n", "\nvtop_gpu_utilization_percent{"} {
		if !strings.Contains(string(omText), want) {
			t.Errorf("the export lacks %q", want)
		}
	}

	// vtop's p95 at the last evaluation of the replay.
	p, err := app.OpenPlayer([]string{rec}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	for p.Next() {
	}
	p.Close()
	fr := p.Frame()
	if p.Stopped() != nil || fr == nil || len(fr.Endpoints) != 1 {
		t.Fatalf("replay: %v", p.Stopped())
	}
	want := fr.Endpoints[0].Stats.TTFT.P95
	if math.IsNaN(want) || fr.Endpoints[0].Stats.TTFT.Count == 0 {
		t.Fatalf("vtop has no TTFT p95 at %v: nothing to compare", fr.Time)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1m\n"), 0o644)
	// The recording is from the simulator's epoch: keep its blocks past
	// the default 15-day retention.
	cmd := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+data, "--storage.tsdb.retention.time=100y",
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	api := "http://" + addr
	for {
		resp, err := http.Get(api + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		time.Sleep(100 * time.Millisecond) // the test's own timeout bounds this wait
	}
	// vtop's window quantile is over the exact bucket increase between the
	// scrape a window before and the newest (no rate() extrapolation).
	win := fmt.Sprintf("%ds", int(fr.Window.Seconds()))
	q := "histogram_quantile(0.95, sum by (le) (vllm:time_to_first_token_seconds_bucket - vllm:time_to_first_token_seconds_bucket offset " + win + "))"
	got, err := promQuery(api, q, fr.Time)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Fatalf("TTFT p95 at %v: vtop %v, Prometheus %v (%s)", fr.Time, want, got, q)
	}
	t.Logf("TTFT p95 at %v: vtop %v, Prometheus %v", fr.Time.UTC(), want, got)
	// The GPU series came through the backfill: utilization as vtop read it.
	g := &fr.GPU.GPUs[0]
	gq := fmt.Sprintf(`vtop_gpu_utilization_percent{gpu="%d",uuid=%q}`, g.Index, g.UUID)
	gu, err := promQuery(api, gq, fr.GPU.Time)
	if err != nil || gu != g.UtilGPU {
		t.Errorf("%s at %v: Prometheus %v (%v), vtop %v", gq, fr.GPU.Time, gu, err, g.UtilGPU)
	}
}

func promQuery(api, q string, at time.Time) (float64, error) {
	u := api + "/api/v1/query?" + url.Values{"query": {q}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}.Encode()
	resp, err := http.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Status, Error string
		Data          struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, err
	}
	if out.Status != "success" || len(out.Data.Result) != 1 {
		return 0, fmt.Errorf("%s: %s %s (%d series)", q, out.Status, out.Error, len(out.Data.Result))
	}
	s, _ := out.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}
