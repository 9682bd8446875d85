package diagnose_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// TestMatchesPrometheus runs the Debian prometheus server against a moving
// endpoint, then feeds the very samples Prometheus stored into vtop and
// compares: histogram_quantile over rate() and irate() must come out the same.
// (vtop's rates are exact differences between scrapes; Prometheus' rate()
// extrapolates to the range edges by one factor for every bucket, which
// cancels in a quantile as long as no bucket starts near zero, as here.)
func TestMatchesPrometheus(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (.ci/run installs the Debian package)")
	}
	bounds := []string{"0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf"}
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(7, 7))
	counts := make([]float64, len(bounds))
	for i := range counts {
		counts[i] = 1e6 * float64(i+1) // far from zero: see above
	}
	gen := 5e7
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		// Most observations in the low buckets, few above 1 s, so p95 and
		// p99 fall inside finite buckets and exercise the interpolation.
		c := 0.0
		for i := range counts {
			c += float64(rng.IntN([]int{40, 40, 40, 40, 40, 8, 2}[i]))
			counts[i] += c
		}
		gen += float64(rng.IntN(5000))
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		for i, le := range bounds {
			fmt.Fprintf(w, "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=%q,model_name=\"m\"} %s\n", le, fmtF(counts[i]))
		}
		fmt.Fprintf(w, "vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} %s\n", fmtF(gen))
	}))
	defer target.Close()

	dir := t.TempDir()
	port := freePort(t)
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: vllm\n    static_configs:\n      - targets: ['%s']\n",
		strings.TrimPrefix(target.URL, "http://"))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address=127.0.0.1:"+port, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); cmd.Wait() }()
	api := "http://127.0.0.1:" + port

	// Wait for 8 scrapes.
	deadline := time.Now().Add(40 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatal("prometheus did not collect 8 samples in 40 s")
		}
		time.Sleep(500 * time.Millisecond)
		res, err := query(api, "count_over_time(vllm:generation_tokens_total[1m])", time.Now())
		if err == nil && len(res) == 1 && res[0].value() >= 8 {
			break
		}
	}
	at := time.Now().Truncate(time.Millisecond)
	const rng6 = "[6s]"
	raw, err := query(api, "vllm:time_to_first_token_seconds_bucket"+rng6, at)
	if err != nil || len(raw) != len(bounds) {
		t.Fatalf("raw buckets: %v (%d series)", err, len(raw))
	}
	rawGen, err := query(api, "vllm:generation_tokens_total"+rng6, at)
	if err != nil || len(rawGen) != 1 {
		t.Fatalf("raw counter: %v", err)
	}

	// Rebuild every scrape Prometheus stored, and feed it to vtop.
	byTS := map[float64]map[string]float64{}
	for _, s := range raw {
		for _, v := range s.Values {
			ts, val := v.point()
			if byTS[ts] == nil {
				byTS[ts] = map[string]float64{}
			}
			byTS[ts][s.Metric["le"]] = val
		}
	}
	genAt := map[float64]float64{}
	for _, v := range rawGen[0].Values {
		ts, val := v.point()
		genAt[ts] = val
	}
	var stamps []float64
	for ts := range byTS {
		stamps = append(stamps, ts)
	}
	sort.Float64s(stamps)
	if len(stamps) < 4 {
		t.Fatalf("only %d samples in the range", len(stamps))
	}
	e := diagnose.New(diagnose.Config{Window: 6 * time.Second, Interval: time.Second}, []diagnose.TargetInfo{{Name: "t"}})
	n := sources.NewNormalizer()
	for _, ts := range stamps {
		var b strings.Builder
		for _, le := range bounds {
			fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=%q,model_name=\"m\"} %s\n", le, fmtF(byTS[ts][le]))
		}
		fmt.Fprintf(&b, "vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} %s\n", fmtF(genAt[ts]))
		snap, err := n.Normalize([]byte(b.String()), "text/plain; version=0.0.4")
		if err != nil {
			t.Fatal(err)
		}
		e.Ingest(0, sources.Scrape{Target: "t", Time: unix(ts), Data: snap})
	}
	st := e.Frame(at).Endpoints[0].Stats
	for _, c := range []struct {
		q   string
		got float64
	}{{"0.5", st.TTFT.P50}, {"0.9", st.TTFT.P90}, {"0.95", st.TTFT.P95}, {"0.99", st.TTFT.P99}} {
		res, err := query(api, "histogram_quantile("+c.q+", rate(vllm:time_to_first_token_seconds_bucket"+rng6+"))", at)
		if err != nil || len(res) != 1 {
			t.Fatalf("histogram_quantile: %v", err)
		}
		if want := res[0].value(); !close(c.got, want) {
			t.Errorf("p%s: vtop %v, prometheus %v", c.q, c.got, want)
		}
	}
	// irate = the last two samples; vtop (whose windows end at the newest
	// scrape) with a window reaching back exactly to the one before does the
	// same arithmetic.
	e.SetWindow(unix(stamps[len(stamps)-1]).Sub(unix(stamps[len(stamps)-2])))
	got := e.Frame(at).Endpoints[0].Stats.GenTokRate
	res, err := query(api, "irate(vllm:generation_tokens_total"+rng6+")", at)
	if err != nil || len(res) != 1 {
		t.Fatalf("irate: %v", err)
	}
	if want := res[0].value(); !close(got, want) {
		t.Errorf("rate: vtop %v, prometheus irate %v", got, want)
	}
	t.Logf("compared %d scrapes: p50 %.6g p95 %.6g p99 %.6g, gen %.6g tok/s", len(stamps), st.TTFT.P50, st.TTFT.P95, st.TTFT.P99, got)
}

func fmtF(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func unix(ts float64) time.Time {
	return time.UnixMilli(int64(math.Round(ts * 1000)))
}

func close(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

type promSeries struct {
	Metric map[string]string `json:"metric"`
	Value  promPoint         `json:"value"`
	Values []promPoint       `json:"values"`
}

type promPoint [2]any

func (p promPoint) point() (float64, float64) {
	ts, _ := p[0].(float64)
	s, _ := p[1].(string)
	v, _ := strconv.ParseFloat(s, 64)
	return ts, v
}

func (s promSeries) value() float64 { _, v := s.Value.point(); return v }

func query(api, q string, at time.Time) ([]promSeries, error) {
	u := api + "/api/v1/query?" + url.Values{"query": {q}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}.Encode()
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSeries `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	if out.Status != "success" {
		return nil, fmt.Errorf("%s: %s", q, out.Error)
	}
	return out.Data.Result, nil
}
