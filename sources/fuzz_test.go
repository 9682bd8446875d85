package sources

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"unicode"
)

// FuzzNormalize: whatever a target sends, normalizing never panics, every
// string that leaves sources is printable, and every number is either
// unknown or sane. `go test` runs the seeds (the real dumps); run
// `go test ./sources -fuzz FuzzNormalize -fuzztime 5m` to search further.
func FuzzNormalize(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "dumps", "*.txt"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err == nil {
			f.Add(b, "text/plain; version=0.0.4")
		}
	}
	f.Add([]byte("# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total{model_name=\"m\"} 1\n# EOF\n"), "application/openmetrics-text; version=1.0.0")
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
			for _, sub := range s.Subs {
				printable(t, sub.Key.Model+sub.Key.Engine)
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
