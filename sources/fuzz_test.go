package sources

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzNormalize: whatever a target sends, normalizing never panics, every
// string that leaves sources is printable, and every number is either
// unknown or sane. `go test` runs the seeds (the real dumps and every
// hostile case); .ci/run fuzzes briefly, scripts/fuzz.sh for longer.
func FuzzNormalize(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "dumps", "*.txt"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err == nil {
			f.Add(b, "text/plain; version=0.0.4")
		}
	}
	f.Add([]byte("# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total{model_name=\"m\"} 1\n# EOF\n"), "application/openmetrics-text; version=1.0.0")
	for _, body := range hostileSeeds() {
		f.Add([]byte(body), "text/plain; version=0.0.4")
	}
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		n := NewNormalizer()
		n.MaxSamples = 5000
		for i := 0; i < 2; i++ { // twice: the warm path too
			s, err := n.Normalize(body, ct)
			if err != nil {
				printable(t, err.Error())
				continue
			}
			for _, w := range s.Warnings {
				printable(t, w)
			}
			if len(s.Subs) > n.MaxSubs {
				t.Fatalf("%d sub-series, cap %d", len(s.Subs), n.MaxSubs)
			}
			for _, sub := range s.Subs {
				printable(t, sub.Key.Model+sub.Key.Engine)
				if utf8.RuneCountInString(sub.Key.Model) > MaxLabelLen+1 {
					t.Fatalf("model key of %d runes", utf8.RuneCountInString(sub.Key.Model))
				}
				for _, g := range []Gauge{GRunning, GWaiting, GSwapped} {
					if v := sub.Gauges[g]; v < 0 || math.IsInf(v, 0) {
						t.Fatalf("request count %v escaped validation", v)
					}
				}
				if kv := sub.Gauges[GKVUsage]; !math.IsNaN(kv) && (kv < 0 || kv > 1+1e-9) {
					t.Fatalf("KV usage %v escaped validation", kv)
				}
				for _, c := range sub.Counters {
					if !math.IsNaN(c) && (c < 0 || math.IsInf(c, 0)) {
						t.Fatalf("counter %v escaped validation", c)
					}
				}
				for _, h := range sub.Hists {
					if !h.Present() {
						continue
					}
					if len(h.Bounds) != len(h.Counts) || !math.IsInf(h.Bounds[len(h.Bounds)-1], 1) {
						t.Fatalf("malformed histogram %v %v", h.Bounds, h.Counts)
					}
					for i := 1; i < len(h.Counts); i++ {
						if h.Counts[i] < h.Counts[i-1] || h.Bounds[i] <= h.Bounds[i-1] {
							t.Fatalf("histogram not monotonic: %v %v", h.Bounds, h.Counts)
						}
					}
				}
				for _, list := range sub.Labeled {
					for _, lv := range list {
						printable(t, lv.Label)
					}
				}
			}
		}
	})
}

func printable(t *testing.T, s string) {
	t.Helper()
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r) {
			t.Fatalf("unsafe rune %U in %q", r, s)
		}
	}
}

// hostileSeeds are the bodies of the hostile cases of issue 13 and before:
// each starts the fuzzer next to a path that once went wrong.
func hostileSeeds() []string {
	long := strings.Repeat("m", MaxLabelLen+20)
	var many, churn strings.Builder
	for i := 0; i < 300; i++ { // beyond DefaultMaxSubs
		fmt.Fprintf(&many, "vllm:num_requests_running{model_name=\"m%d\"} 1\n", i)
	}
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&churn, "vllm:num_requests_waiting{model_name=\"c%d\",engine=\"%d\"} %d\n", i, i, i)
	}
	return []string{
		"vllm:num_requests_running{model_name=\"m\"} -3\nvllm:num_requests_waiting{model_name=\"m\"} -1\n",
		"vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"1e300\"} 5\nvllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 5\nvllm:time_to_first_token_seconds_count{model_name=\"m\"} 5\nvllm:time_to_first_token_seconds_sum{model_name=\"m\"} 1e300\n",
		fmt.Sprintf("vllm:num_requests_running{model_name=%q} 1\nvllm:num_requests_running{model_name=%q} 2\n", long+"a", long+"b"),
		"vllm:num_requests_running{model_name=\"m\"} NaN\nvllm:kv_cache_usage_perc{model_name=\"m\"} +Inf\nvllm:prompt_tokens_total{model_name=\"m\"} -Inf\n",
		"vllm:num_requests_running{model_name=\"\x1b[2J\x1b]0;pwned\x07\u202eevil\"} 1\n",
		"vllm:num_requests_running{model_name=\"m\"} 1\nvllm:num_requests_running{model_name=\"m\"} 2\n",
		"vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} -0.2\n",
		"vllm:num_requests_running{model_name=\"x\" 1\n",
		many.String(),
		churn.String() + "vllm:num_requests_running{model_name=\"x\" 1\n",
		"# HELP vllm:num_requests_running \x00\x1b[31m\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1e308\n",
	}
}

// FuzzParseTarget: whatever is typed as a target, parsing never panics, and
// what is shown (the name, an error) is printable and carries no query value.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"localhost:8000", "http://h:1/metrics?token=s3cret&x=1", "https://u:p@h/x?api_key=k#frag",
		"h:99999?token=s3cret", "ftp://h:1/?token=s3cret", "[::1]:9000", "http://h:1/%zz?token=s3cret", "\x1b[2J:80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tg, err := ParseTarget(in)
		if err != nil {
			printable(t, err.Error())
			return
		}
		printable(t, tg.Name)
		if _, q, ok := strings.Cut(tg.Name, "?"); ok {
			q, _, _ = strings.Cut(q, "#")
			for _, kv := range strings.Split(q, "&") {
				if _, v, ok := strings.Cut(kv, "="); ok && v != "xxxxx" {
					t.Fatalf("name %q shows a query value", tg.Name)
				}
			}
		}
	})
}
