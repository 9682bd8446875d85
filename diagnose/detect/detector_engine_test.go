package detect

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// exposition renders one scrape of a thrashing engine in a generation's
// own metric names: V0 (0.6-style: gpu_cache_usage_perc, swap gauges, no
// engine label) or V1 (kv_cache_usage_perc, engine label). k counts
// scrapes; counters move by a fixed amount per scrape.
func exposition(gen sources.Gen, k float64, swapped float64, thrash bool) string {
	var b strings.Builder
	kvUse, pre := 0.97, 3.0
	if !thrash {
		kvUse, pre = 0.4, 0
	}
	l := `model_name="llama"`
	kv := "vllm:kv_cache_usage_perc"
	help := "Number of requests in model execution batches."
	if gen == sources.GenV0 {
		kv, help = "vllm:gpu_cache_usage_perc", "Number of requests currently running on GPU."
	} else {
		l = `engine="0",` + l
	}
	fmt.Fprintf(&b, "# HELP vllm:num_requests_running %s\n# TYPE vllm:num_requests_running gauge\n", help)
	fmt.Fprintf(&b, "vllm:num_requests_running{%s} 250\nvllm:num_requests_waiting{%s} 40\n%s{%s} %g\n", l, l, kv, l, kvUse)
	if gen == sources.GenV0 {
		fmt.Fprintf(&b, "vllm:num_requests_swapped{%s} %g\nvllm:cpu_cache_usage_perc{%s} %g\n", l, swapped, l, swapped/100)
	}
	fmt.Fprintf(&b, "vllm:num_preemptions_total{%s} %g\n", l, pre*k)
	fmt.Fprintf(&b, "vllm:prompt_tokens_total{%s} %g\nvllm:generation_tokens_total{%s} %g\n", l, 800*k, l, 300*k)
	for _, r := range []string{"stop", "length", "abort"} {
		v := 0.0
		if r == "stop" {
			v = k
		}
		fmt.Fprintf(&b, "vllm:request_success_total{%s,finished_reason=%q} %g\n", l, r, v)
	}
	for _, h := range []struct {
		name string
		les  []string
		per  []float64
		sum  float64
	}{
		{"vllm:time_to_first_token_seconds", []string{"0.5", "5", "+Inf"}, []float64{1, 10, 10}, 30},
		{"vllm:request_prompt_tokens", []string{"1000", "+Inf"}, []float64{1, 1}, 800},
		{"vllm:request_generation_tokens", []string{"1000", "+Inf"}, []float64{1, 1}, 300},
	} {
		for i, le := range h.les {
			fmt.Fprintf(&b, "%s_bucket{%s,le=%q} %g\n", h.name, l, le, h.per[i]*k)
		}
		fmt.Fprintf(&b, "%s_sum{%s} %g\n%s_count{%s} %g\n", h.name, l, h.sum*k, h.name, l, h.per[len(h.per)-1]*k)
	}
	eng := ""
	if gen == sources.GenV1 {
		eng = `engine="0",`
	}
	fmt.Fprintf(&b, "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",enable_prefix_caching=\"False\",%sgpu_memory_utilization=\"0.9\",num_gpu_blocks=\"2000\"} 1\n", eng)
	return b.String()
}

// The whole way through: exposition → normalizer → engine → detector, for
// a V0 and a V1 engine in the same state. Both thrash; only V0 swaps; the
// advice names the V0-only flag only for V0.
func TestDetectorOverRealMetricSets(t *testing.T) {
	run := func(t *testing.T, gen sources.Gen, thrash bool) *diagnose.Frame {
		norm := sources.NewNormalizer()
		e := diagnose.New(diagnose.Config{Window: time.Minute, Interval: time.Second}, []diagnose.TargetInfo{{Name: "replica-3", MaxNumSeqs: 256}})
		d, err := NewDetector(chatCfg())
		if err != nil {
			t.Fatal(err)
		}
		var f *diagnose.Frame
		for k := 1; k <= 400; k++ {
			at := t0.Add(time.Duration(k) * time.Second)
			snap, err := norm.Normalize([]byte(exposition(gen, float64(k), 2, thrash)), "text/plain; version=0.0.4")
			if err != nil {
				t.Fatal(err)
			}
			e.Ingest(0, sources.Scrape{Target: "replica-3", Time: at, Data: snap})
			f = e.Frame(at)
			d.Evaluate(f)
		}
		return f
	}
	for _, gen := range []sources.Gen{sources.GenV0, sources.GenV1} {
		t.Run(gen.String(), func(t *testing.T) {
			f := run(t, gen, true)
			if got := f.Endpoints[0].Version.Gen; got != gen {
				t.Fatalf("detected %v", got)
			}
			th := findingOf(f, "kv_cache_thrashing")
			if th == nil {
				t.Fatalf("no thrashing: %+v", f.Findings)
			}
			// 2,000 × 0.85 = 1,700; 1,100 tokens → 69 blocks; 1,700 / 69 = 24.
			// 3 preemptions per finished request: critical.
			if spell(th.Flags[0].From) != "256" || spell(th.Flags[0].To) != "24" || th.Severity != diagnose.SevCritical || th.Model != "llama" {
				t.Errorf("thrashing %+v", th)
			}
			sw := findingOf(f, "swapping")
			if (sw != nil) != (gen == sources.GenV0) {
				t.Errorf("swapping: %+v", sw)
			}
			// Caching off is only shown without thrashing (which explains
			// misses and supersedes it).
			f = run(t, gen, false)
			pc := findingOf(f, "prefix_cache_miss")
			if pc == nil || pc.Severity != diagnose.SevInfo {
				t.Fatalf("prefix caching off not noted: %+v", pc)
			}
			want := map[sources.Gen]string{sources.GenV0: "V0's default: pass --enable-prefix-caching",
				sources.GenV1: "passes --no-enable-prefix-caching: remove it"}[gen]
			if !strings.Contains(txt(pc.Flags[0].Why), want) {
				t.Errorf("prefix advice for %v: %q", gen, txt(pc.Flags[0].Why))
			}
		})
	}
}
