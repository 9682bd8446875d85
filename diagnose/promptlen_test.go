package diagnose

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// Prompt-length histograms keep their last finite bucket and +Inf's (the
// share above the layout's top), never whole buckets, whatever the
// layout: one endpoint whose layout has a single finite bound (its three
// columns are every column) merged into the fleet with another layout's
// panicked on buckets one side did not have (a recording's replay did).
func TestPromptLenLayoutsMerge(t *testing.T) {
	body := func(bounds []string, counts []float64, n, sum float64) []byte {
		b := "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1\n# TYPE vllm:request_prompt_tokens histogram\n"
		for i, le := range bounds {
			b += fmt.Sprintf("vllm:request_prompt_tokens_bucket{engine=\"0\",le=\"%s\",model_name=\"m\"} %g\n", le, counts[i])
		}
		b += fmt.Sprintf("vllm:request_prompt_tokens_count{engine=\"0\",model_name=\"m\"} %g\nvllm:request_prompt_tokens_sum{engine=\"0\",model_name=\"m\"} %g\n", n, sum)
		return []byte(b)
	}
	e := New(Config{Window: time.Minute, Interval: time.Second}, []TargetInfo{{Name: "one-bound"}, {Name: "chat"}})
	norms := []*sources.Normalizer{sources.NewNormalizer(), sources.NewNormalizer()}
	at := time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)
	for n := range 3 {
		k := float64(n)
		for i, b := range [][]byte{
			body([]string{"5000", "+Inf"}, []float64{10 * k, 20 * k}, 20*k, 80000*k), // half above 5,000
			body([]string{"1", "2", "5", "10", "+Inf"}, []float64{0, 0, 0, 10 * k, 10 * k}, 10*k, 60*k),
		} {
			snap, err := norms[i].Normalize(b, "text/plain; version=0.0.4")
			if err != nil {
				t.Fatal(err)
			}
			e.Ingest(i, sources.Scrape{Target: e.eps[i].name, Time: at.Add(time.Duration(n) * time.Second), Data: snap})
		}
	}
	f := e.Frame(at.Add(2 * time.Second))
	if st := f.Endpoints[0].Stats; st.PromptLenTop != 5000 || math.Abs(st.PromptOverTop-0.5) > 1e-9 {
		t.Errorf("one-bound endpoint: top %v, above it %v; want 5000 and 0.5", st.PromptLenTop, st.PromptOverTop)
	}
	if st := f.Endpoints[1].Stats; st.PromptLenTop != 10 || st.PromptOverTop != 0 {
		t.Errorf("chat endpoint: top %v, above it %v; want 10 and 0", st.PromptLenTop, st.PromptOverTop)
	}
	// The fleet: different tops are no one share; the mean still is.
	if st := f.Fleet.Stats; !math.IsNaN(st.PromptOverTop) || math.Abs(st.AvgPromptLen-(80000+60)/30.0) > 1e-9 {
		t.Errorf("fleet: above the top %v (want unknown), mean %v", st.PromptOverTop, st.AvgPromptLen)
	}
}
