package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vtop-dev/vtop/ui/report"
)

// thrashServer is a V1 engine out of KV: 97% used, 5 preemptions and 10
// slow first tokens per scrape, 1,000 blocks of 16 tokens, 1,100-token
// requests.
func thrashServer(t *testing.T) string {
	t.Helper()
	var mu sync.Mutex
	n := 0.0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		l := `engine="0",model_name="llama"`
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# HELP vllm:num_requests_running Number of requests in model execution batches.\n")
		fmt.Fprintf(w, "vllm:num_requests_running{%s} 250\nvllm:num_requests_waiting{%s} 40\nvllm:kv_cache_usage_perc{%s} 0.97\n", l, l, l)
		fmt.Fprintf(w, "vllm:num_preemptions_total{%s} %g\n", l, 5*k)
		fmt.Fprintf(w, "vllm:generation_tokens_total{%s} %g\nvllm:prompt_tokens_total{%s} %g\n", l, 300*k, l, 800*k)
		fmt.Fprintf(w, "vllm:request_success_total{%s,finished_reason=\"stop\"} %g\n", l, k)
		fmt.Fprintf(w, "vllm:request_success_total{%s,finished_reason=\"abort\"} 0\n", l)
		for _, b := range []struct {
			le string
			v  float64
		}{{"0.5", 0}, {"5", 10 * k}, {"+Inf", 10 * k}} {
			fmt.Fprintf(w, "vllm:time_to_first_token_seconds_bucket{%s,le=%q} %g\n", l, b.le, b.v)
		}
		fmt.Fprintf(w, "vllm:time_to_first_token_seconds_count{%s} %g\nvllm:time_to_first_token_seconds_sum{%s} %g\n", l, 10*k, l, 30*k)
		for _, h := range []struct {
			name string
			per  float64
		}{{"vllm:request_prompt_tokens", 800}, {"vllm:request_generation_tokens", 300}} {
			for _, le := range []string{"1000", "+Inf"} {
				fmt.Fprintf(w, "%s_bucket{%s,le=%q} %g\n", h.name, l, le, k)
			}
			fmt.Fprintf(w, "%s_count{%s} %g\n%s_sum{%s} %g\n", h.name, l, k, h.name, l, h.per*k)
		}
		fmt.Fprintf(w, "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",enable_prefix_caching=\"True\",engine=\"0\",gpu_memory_utilization=\"0.9\",num_gpu_blocks=\"1000\"} 1\n")
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// The report lists the finding with its computed flag and exits with its
// severity; the JSON carries the same finding.
func TestOnceFindings(t *testing.T) {
	dir := t.TempDir()
	addr := thrashServer(t)
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("targets:\n  - url: %s\n    max_num_seqs: 256\n", addr)), 0o644)
	getenv := func(k string) string {
		if k == "VTOP_CONFIG" {
			return cfg
		}
		return ""
	}
	code, out, errOut := runArgs(t, getenv, "--once", "-w", "1500ms", "-i", "100ms")
	if code != int(report.Critical) {
		t.Fatalf("exit %d (%s)\n%s", code, errOut, out)
	}
	// 1,000 × 0.85 = 850 usable; 1,100 tokens → 69 blocks; 850 / 69 = 12.
	for _, want := range []string{"findings (", "CRITICAL KV cache thrashing on " + addr + " (llama, engine 0)",
		"→ lower --max-num-seqs 256 → 12", "--max-num-seqs 256 → 12: cache config: 1,000 blocks × (1 − 15% headroom) = 850 usable",
		"live: KV 97% × 1,000 blocks ÷ 250 running = 3.9 blocks per running sequence", "the smaller: 12",
		"[kv_cache_thrashing]", "status CRITICAL"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runArgs(t, getenv, "--once", "-o", "json", "-w", "1500ms", "-i", "100ms")
	var r report.JSONReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if code != 2 || r.Status.Code != 2 || len(r.Findings) == 0 {
		t.Fatalf("exit %d, %+v", code, r.Status)
	}
	fd := r.Findings[0]
	if fd.Rule != "kv_cache_thrashing" || fd.Severity != "critical" || fd.Target != addr || fd.Engine != "0" || fd.FirstSeen == nil ||
		len(fd.Evidence) == 0 || len(fd.Flags) == 0 || fd.Flags[0].From != "256" || fd.Flags[0].To != "12" {
		t.Errorf("finding %+v", fd)
	}
	// A healthy endpoint: no findings, an empty array, exit 0.
	code, out, _ = runArgs(t, nil, "--once", "-o", "json", "-w", "600ms", "-i", "200ms", movingServer(t, "m"))
	if code != 0 || !strings.Contains(out, `"findings": []`) {
		t.Errorf("healthy: exit %d\n%s", code, out)
	}
}
