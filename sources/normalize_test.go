package sources

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

const textCT = "text/plain; version=0.0.4"

func norm(t *testing.T, body string) (*Snapshot, error) {
	t.Helper()
	return NewNormalizer().Normalize([]byte(body), textCT)
}

func TestMultiEngineMultiModel(t *testing.T) {
	body := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="1",model_name="b"} 3
vllm:num_requests_running{engine="0",model_name="b"} 2
vllm:num_requests_running{engine="10",model_name="a"} 1
vllm:num_requests_running{engine="2",model_name="a"} 4
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="b"} 100
vllm:generation_tokens_total{engine="1",model_name="b"} 50
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="1000"} 1
vllm:cache_config_info{block_size="32",engine="1",num_gpu_blocks="500"} 1
`
	s, err := norm(t, body)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, sub := range s.Subs {
		keys = append(keys, sub.Key.Model+"/"+sub.Key.Engine)
	}
	// Sorted by model, then engine numerically (2 before 10).
	if got := strings.Join(keys, " "); got != "a/2 a/10 b/0 b/1" {
		t.Errorf("sub order %q", got)
	}
	if c := s.Subs[2].Cache; c == nil || c.CapacityTokens() != 16000 {
		t.Errorf("engine 0 cache %+v", c)
	}
	if c := s.Subs[3].Cache; c == nil || c.CapacityTokens() != 16000 || c.BlockSize != 32 {
		t.Errorf("engine 1 cache %+v", c)
	}
	if got := s.Subs[3].Counters[CGenTokens]; got != 50 {
		t.Errorf("engine 1 tokens %v", got)
	}
	if s.Version.Gen != GenV1 {
		t.Errorf("engine label implies V1, got %s", s.Version)
	}
	if fmt.Sprint(s.Models()) != "[a b]" {
		t.Errorf("models %v", s.Models())
	}
}

func TestPIDMerge(t *testing.T) {
	body := `# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m",pid="1"} 0
vllm:kv_cache_usage_perc{engine="0",model_name="m",pid="2"} 0.4
vllm:kv_cache_usage_perc{engine="0",model_name="m",pid="3"} 0
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m",pid="1"} 10
vllm:prompt_tokens_total{engine="0",model_name="m",pid="2"} 5
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="1",model_name="m",pid="1"} 1
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m",pid="1"} 2
vllm:time_to_first_token_seconds_bucket{engine="0",le="1",model_name="m",pid="2"} 3
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m",pid="2"} 3
`
	s, err := norm(t, body)
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subs[0]
	if len(s.Subs) != 1 || sub.Gauges[GKVUsage] != 0.4 || sub.Counters[CPromptTokens] != 15 {
		t.Errorf("pid merge: kv %v prompt %v subs %d", sub.Gauges[GKVUsage], sub.Counters[CPromptTokens], len(s.Subs))
	}
	if h := sub.Hists[HTTFT]; fmt.Sprint(h.Counts) != "[4 5]" || h.Count != 5 {
		t.Errorf("pid histogram merge %v count %v", h.Counts, h.Count)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings %v", s.Warnings)
	}
}

func TestAliasPrecedence(t *testing.T) {
	// The deprecated name comes first on the wire (as in the v0.10.1 dump)
	// with a different value: the current name must win.
	body := `vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.9
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:gpu_prefix_cache_queries_total{engine="0",model_name="m"} 1000
vllm:gpu_prefix_cache_hits_total{engine="0",model_name="m"} 900
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 200
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 20
vllm:time_per_output_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 7
vllm:time_per_output_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 7
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.05",model_name="m"} 1
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.1",model_name="m"} 2
vllm:inter_token_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 3
vllm:time_per_output_token_seconds_count{engine="0",model_name="m"} 7
`
	s, err := norm(t, body)
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subs[0]
	if sub.Gauges[GKVUsage] != 0.5 || sub.Counters[CPrefixQueries] != 200 || sub.Counters[CPrefixHits] != 20 {
		t.Errorf("alias precedence: kv %v q %v h %v", sub.Gauges[GKVUsage], sub.Counters[CPrefixQueries], sub.Counters[CPrefixHits])
	}
	if h := sub.Hists[HITL]; fmt.Sprint(h.Counts) != "[1 2 3]" || h.Count != 3 {
		t.Errorf("ITL mixed with TPOT: %v count %v", h.Counts, h.Count)
	}
	// Alone, the old names still feed the signal (older releases).
	s, err = norm(t, "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.25\n")
	if err != nil || s.Subs[0].Gauges[GKVUsage] != 0.25 {
		t.Errorf("old name alone: %v %v", err, s)
	}
}

func TestOpenMetricsAndCounterNaming(t *testing.T) {
	// OpenMetrics names the counter family without _total; samples carry it.
	om := `# TYPE vllm:prompt_tokens counter
# HELP vllm:prompt_tokens Number of prefill tokens processed.
vllm:prompt_tokens_total{engine="0",model_name="m"} 42.0
vllm:prompt_tokens_created{engine="0",model_name="m"} 1.7e+09
# TYPE vllm:num_requests_running gauge
# HELP vllm:num_requests_running Number of requests in model execution batches.
vllm:num_requests_running{engine="0",model_name="m"} 3.0
# EOF
`
	s, err := NewNormalizer().Normalize([]byte(om), "application/openmetrics-text; version=1.0.0; charset=utf-8")
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subs[0]
	if sub.Counters[CPromptTokens] != 42 || sub.Created[CPromptTokens] != 1.7e9 || sub.Gauges[GRunning] != 3 {
		t.Errorf("openmetrics: %v %v %v", sub.Counters[CPromptTokens], sub.Created[CPromptTokens], sub.Gauges[GRunning])
	}
	if s.Version.Gen != GenV1 {
		t.Errorf("V1 help text not recognised: %s", s.Version)
	}
	// A simulator that drops _total on a counter is read too.
	s, err = norm(t, "vllm:generation_tokens{model_name=\"m\"} 9\n")
	if err != nil || s.Subs[0].Counters[CGenTokens] != 9 {
		t.Errorf("counter without _total: %v", err)
	}
	// OpenMetrics without # EOF is a truncated body.
	if _, err := NewNormalizer().Normalize([]byte(strings.TrimSuffix(om, "# EOF\n")), "application/openmetrics-text; version=1.0.0"); err == nil {
		t.Error("OpenMetrics body without # EOF accepted")
	}
}

func TestHostileValues(t *testing.T) {
	cases := []struct {
		name, body string
		check      func(*testing.T, *Snapshot)
		warn       string // a warning must contain this
	}{
		{"nan gauge", `vllm:num_requests_running{model_name="m"} NaN` + "\n", func(t *testing.T, s *Snapshot) {
			if !math.IsNaN(s.Subs[0].Gauges[GRunning]) {
				t.Error("NaN gauge not unknown")
			}
		}, "is NaN"},
		{"inf counter", `vllm:prompt_tokens_total{model_name="m"} +Inf` + "\n", func(t *testing.T, s *Snapshot) {
			if !math.IsNaN(s.Subs[0].Counters[CPromptTokens]) {
				t.Error("+Inf counter used")
			}
		}, "counters must be finite"},
		{"negative counter", `vllm:prompt_tokens_total{model_name="m"} -5` + "\n", nil, "counters must be finite"},
		{"kv above one", `vllm:kv_cache_usage_perc{engine="0",model_name="m"} 1.5` + "\n", func(t *testing.T, s *Snapshot) {
			if !math.IsNaN(s.Subs[0].Gauges[GKVUsage]) {
				t.Error("KV 150% used")
			}
		}, "outside 0..1"},
		{"negative kv", `vllm:kv_cache_usage_perc{engine="3",model_name="m"} -0.38` + "\n", nil, `engine="3"`},
		{"decreasing buckets", `vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 10
vllm:time_to_first_token_seconds_bucket{le="1",model_name="m"} 8
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 12
`, func(t *testing.T, s *Snapshot) {
			if s.Subs[0].Hists[HTTFT].Present() {
				t.Error("decreasing histogram kept")
			}
		}, "buckets decrease"},
		{"no +Inf", `vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 1
vllm:time_to_first_token_seconds_bucket{le="1",model_name="m"} 2
`, nil, "no +Inf bucket"},
		{"nan bucket", `vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} NaN
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 2
`, nil, "le=0.1"},
		{"bad le", `vllm:time_to_first_token_seconds_bucket{le="fast",model_name="m"} 1
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 2
`, nil, `le="fast"`},
		{"duplicate series", `vllm:num_requests_running{model_name="m"} 1
vllm:num_requests_running{model_name="m"} 99
`, func(t *testing.T, s *Snapshot) {
			if s.Subs[0].Gauges[GRunning] != 1 {
				t.Errorf("duplicate replaced first value: %v", s.Subs[0].Gauges[GRunning])
			}
		}, "duplicate series"},
		{"unsorted buckets", `vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 3
vllm:time_to_first_token_seconds_bucket{le="1",model_name="m"} 2
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 1
`, func(t *testing.T, s *Snapshot) {
			if h := s.Subs[0].Hists[HTTFT]; fmt.Sprint(h.Bounds) != "[0.1 1 +Inf]" || fmt.Sprint(h.Counts) != "[1 2 3]" {
				t.Errorf("unsorted buckets: %v %v", h.Bounds, h.Counts)
			}
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := norm(t, c.body)
			if err != nil {
				t.Fatal(err)
			}
			if c.check != nil {
				c.check(t, s)
			}
			joined := strings.Join(s.Warnings, "\n")
			if c.warn == "" && joined != "" {
				t.Errorf("unexpected warnings %q", joined)
			}
			if c.warn != "" && !strings.Contains(joined, c.warn) {
				t.Errorf("warnings %q lack %q", joined, c.warn)
			}
			assertPrintable(t, joined)
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"truncated mid-line", "vllm:num_requests_running{model_name=\"m\"} 1\nvllm:num_requests_waiting{model_na", "parse error"},
		{"garbage line", "vllm:num_requests_running{model_name=\"m\"} 1\nthis is not a metric line\n", "parse error"},
		{"tgi", "tgi_queue_size 1\ntgi_batch_current_size 4\n", "looks like Hugging Face TGI"},
		{"not vllm", "go_goroutines 7\n", "no vLLM metrics among 1 samples"},
		{"empty", "", "no samples"},
		{"invalid utf8 help", "# HELP vllm:num_requests_running \x1b[31m\xff\n", "not a valid utf8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := norm(t, c.body)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			assertPrintable(t, err.Error())
		})
	}
}

func TestSampleLimit(t *testing.T) {
	var b bytes.Buffer
	for i := 0; i < 100_000; i++ {
		fmt.Fprintf(&b, "vllm:num_requests_running{model_name=\"m%d\"} 1\n", i)
	}
	n := NewNormalizer()
	_, err := n.Normalize(b.Bytes(), textCT)
	if !errors.Is(err, ErrTooManySamples) || !strings.Contains(err.Error(), "50000") {
		t.Fatalf("err = %v", err)
	}
	// The aborted scrape must not leave 50k series kept: the next, normal
	// scrape sweeps them.
	if _, err := n.Normalize([]byte("vllm:num_requests_running{model_name=\"x\"} 1\n"), textCT); err != nil {
		t.Fatal(err)
	}
	if keptSeries(n) > 1 || len(n.slots) != 1 {
		t.Errorf("series %d slots %d after sweep", keptSeries(n), len(n.slots))
	}
}

// keptSeries is how many series classes n holds for its target: those of
// its previous body's lines, and its own (not shared) ones.
func keptSeries(n *Normalizer) int {
	kept := map[*class]bool{}
	for _, oc := range n.own {
		kept[oc.c] = true
	}
	for _, c := range n.fp.ent[:cap(n.fp.ent)] {
		if c != nil {
			kept[c] = true
		}
	}
	return len(kept)
}

func TestChurnIsBounded(t *testing.T) {
	// A target that invents a new model name every scrape must not grow
	// what it keeps, nor the series classes it shares.
	for _, ct := range []string{textCT, omCT} {
		n := NewNormalizer()
		n.Classes = NewSeriesClasses(16)
		for i := 0; i < 500; i++ {
			body := fmt.Sprintf("vllm:num_requests_running{model_name=\"m%d\"} 1\nvllm:num_requests_waiting{model_name=\"m%d\"} 1\n", i, i)
			if ct == omCT {
				body += "# EOF\n"
			}
			if _, err := n.Normalize([]byte(body), ct); err != nil {
				t.Fatal(err)
			}
		}
		if keptSeries(n) > 2 || len(n.slots) != 1 || len(n.Classes.m) > 16 {
			t.Errorf("%s: series %d slots %d shared classes %d", ct, keptSeries(n), len(n.slots), len(n.Classes.m))
		}
	}
}

func TestHostileText(t *testing.T) {
	esc := "\x1b[2J\x1b]0;pwned\x07\u202eevil\u2066\u009b31m\x00\r\n"
	big := strings.Repeat("A", 1<<20)
	body := fmt.Sprintf("# HELP vllm:num_requests_running %s\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=%q,model_name=%q} 1\n"+
		"vllm:num_requests_running{model_name=%q} 2\n"+
		"vllm:request_success_total{finished_reason=%q,model_name=\"x\"} 3\n"+
		"vllm:cache_config_info{block_size=%q,cache_dtype=%q,num_gpu_blocks=\"10\"} 1\n",
		strings.ReplaceAll(esc, "\n", ""), esc, esc, big, esc, esc, esc)
	s, err := norm(t, body)
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range s.Subs {
		assertPrintable(t, sub.Key.Model)
		assertPrintable(t, sub.Key.Engine)
		if len([]rune(sub.Key.Model)) > MaxLabelLen+1 {
			t.Errorf("1 MiB model name kept at %d runes", len([]rune(sub.Key.Model)))
		}
		for _, l := range sub.Labeled {
			for _, lv := range l {
				assertPrintable(t, lv.Label)
			}
		}
		if sub.Cache != nil {
			for _, l := range sub.Cache.Labels {
				assertPrintable(t, l.Name+l.Value)
			}
			assertPrintable(t, sub.Cache.CacheDtype)
		}
	}
}

// assertPrintable fails if s holds anything a terminal would interpret.
func assertPrintable(t *testing.T, s string) {
	t.Helper()
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r) {
			t.Fatalf("unsafe rune %U in %q", r, s)
		}
	}
}

func TestSanitize(t *testing.T) {
	cases := map[string]string{
		"plain":            "plain",
		"a\x1b[31mb":       `a\x1b[31mb`,
		"bidi\u202eevil":   `bidi\u{202e}evil`,
		"c1\u009bx":        `c1\x9bx`,
		"nul\x00":          `nul\x00`,
		"bad\xffutf8":      `bad\xffutf8`,
		"日本語":              "日本語",
		"arabic\u061cmark": `arabic\u{61c}mark`,
	}
	for in, want := range cases {
		if got := Sanitize(in, 0); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Sanitize(strings.Repeat("x", 10), 4); got != "xxxx…" {
		t.Errorf("cut: %q", got)
	}
	// The cut counts escapes as written: an escape that would pass max is
	// left out whole (the fuzzer's model name with a newline was 124 runes).
	if got := Sanitize("ab\ncd", 6); got != `ab\x0a…` {
		t.Errorf("cut at an escape: %q", got)
	}
	if got := Sanitize("ab\ncd", 5); got != "ab…" {
		t.Errorf("escape past the cut: %q", got)
	}
	// Two long model names with control characters stay two keys, each at
	// most MaxLabelLen+1 runes.
	a, b := strings.Repeat("\n", 70)+"a", strings.Repeat("\n", 70)+"b"
	ka, kb := KeyLabel(a, MaxLabelLen), KeyLabel(b, MaxLabelLen)
	if ka == kb || utf8.RuneCountInString(ka) > MaxLabelLen+1 || utf8.RuneCountInString(kb) > MaxLabelLen+1 {
		t.Errorf("KeyLabel: %q (%d runes), %q (%d runes)", ka, utf8.RuneCountInString(ka), kb, utf8.RuneCountInString(kb))
	}
}

// request_success split by finish_reason (llm-d's spelling) is read like
// finished_reason; a layout with neither label is unknown (no series, a
// warning), never an empty label that reads as 0 aborted.
func TestFinishReasonAlias(t *testing.T) {
	s, err := norm(t, `vllm:request_success_total{finish_reason="stop",model_name="m"} 90
vllm:request_success_total{finish_reason="abort",model_name="m"} 10
`)
	if err != nil {
		t.Fatal(err)
	}
	if v := s.Subs[0].Labeled[LFinished]; len(v) != 2 || s.Subs[0].LabeledValue(LFinished, FinishAbort) != 10 {
		t.Errorf("finish_reason: %+v", v)
	}
	s, err = norm(t, `vllm:num_requests_running{model_name="m"} 3
vllm:request_success_total{reason="stop",model_name="m"} 90
vllm:request_success_total{reason="abort",model_name="m"} 10
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Subs) > 0 && len(s.Subs[0].Labeled[LFinished]) != 0 {
		t.Errorf("unknown layout read: %+v", s.Subs[0].Labeled[LFinished])
	}
	if !strings.Contains(strings.Join(s.Warnings, "\n"), "without its finished_reason label") {
		t.Errorf("no warning: %q", s.Warnings)
	}
}

// Families only one generation defines decide it; the running gauge's
// HELP text does not outrank them, and a contradiction is a warning.
func TestGenerationFromExclusiveFamilies(t *testing.T) {
	// A V0 engine (swap metrics exist only in V0) whose HELP says V1.
	v0 := `# HELP vllm:num_requests_running ` + helpV1Running + `
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 110
vllm:num_requests_swapped{model_name="m"} 6
vllm:cpu_cache_usage_perc{model_name="m"} 0.2
vllm:gpu_cache_usage_perc{model_name="m"} 0.99
`
	s, err := norm(t, v0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version.Gen != GenV0 || !strings.Contains(strings.Join(s.Warnings, "\n"), "says V1, but") {
		t.Errorf("V0 with V1 HELP: %v, warnings %q", s.Version.Gen, s.Warnings)
	}
	// A V1-named exporter (kv_cache_usage_perc, engine label) with V0's HELP.
	v1 := `# HELP vllm:num_requests_running ` + helpV0Running + `
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.4
`
	if s, err = norm(t, v1); err != nil || s.Version.Gen != GenV1 {
		t.Errorf("V1 with V0 HELP: %v %v", err, s.Version.Gen)
	}
	// Both generations' exclusive families: a warning names them.
	both := `vllm:num_requests_running{engine="0",model_name="m"} 3
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.4
vllm:num_requests_swapped{engine="0",model_name="m"} 1
`
	if s, err = norm(t, both); err != nil || !strings.Contains(strings.Join(s.Warnings, "\n"), "metric families of both engine generations") {
		t.Errorf("both: %v %q", err, s.Warnings)
	}
}

// TestFailedChurnIsBounded: a target whose every scrape fails (over
// --max-samples, or a parse error half-way) while its label values churn must
// not grow the normalizer: the failure path sweeps like the success path.
func TestFailedChurnIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		tail string // what makes the scrape fail
	}{
		{"over max-samples", ""},
		{"parse error", "vllm:num_requests_running{model_name=\"x\" 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := NewNormalizer()
			n.MaxSamples = 100
			for i := 0; i < 50; i++ {
				var b bytes.Buffer
				lines := 80
				if tc.tail == "" {
					lines = 150
				}
				for j := 0; j < lines; j++ {
					fmt.Fprintf(&b, "vllm:num_requests_running{model_name=\"m%d-%d\"} 1\n", i, j)
				}
				b.WriteString(tc.tail)
				if _, err := n.Normalize(b.Bytes(), textCT); err == nil {
					t.Fatal("the scrape did not fail")
				}
				if keptSeries(n) > 101 || len(n.slots) > 101 {
					t.Fatalf("scrape %d: series %d slots %d, want at most one scrape's worth", i, keptSeries(n), len(n.slots))
				}
			}
		})
	}
}

// TestNegativeCountGauges: running/waiting are counts; a negative one is an
// engine bug, shown as unknown with a warning, never exported.
func TestNegativeCountGauges(t *testing.T) {
	s, err := norm(t, "vllm:num_requests_running{model_name=\"m\"} -3\nvllm:num_requests_waiting{model_name=\"m\"} -1\n")
	if err != nil {
		t.Fatal(err)
	}
	g := s.Subs[0].Gauges
	if !math.IsNaN(g[GRunning]) || !math.IsNaN(g[GWaiting]) {
		t.Errorf("running %v waiting %v, want unknown", g[GRunning], g[GWaiting])
	}
	if !strings.Contains(strings.Join(s.Warnings, "\n"), "negative") {
		t.Errorf("no warning about the negative gauge: %q", s.Warnings)
	}
}

// TestLongModelNamesStayDistinct: two model names that share their first
// MaxLabelLen runes are two sub-series, not one silently merged.
func TestLongModelNamesStayDistinct(t *testing.T) {
	long := strings.Repeat("m", MaxLabelLen+10)
	s, err := norm(t, fmt.Sprintf("vllm:num_requests_running{model_name=%q} 1\nvllm:num_requests_running{model_name=%q} 2\n", long+"a", long+"b"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Subs) != 2 || s.Subs[0].Key == s.Subs[1].Key {
		t.Fatalf("subs %+v, want two distinct keys", s.Subs)
	}
	for _, sub := range s.Subs {
		if n := len([]rune(sub.Key.Model)); n > MaxLabelLen+10 {
			t.Errorf("key kept %d runes", n)
		}
	}
}

// TestTooManySubs: 10,000 model names on one endpoint keep MaxSubs
// sub-series, with a warning that says so.
func TestTooManySubs(t *testing.T) {
	var b bytes.Buffer
	for i := 0; i < 10_000; i++ {
		fmt.Fprintf(&b, "vllm:num_requests_running{model_name=\"m%d\"} 1\n", i)
	}
	n := NewNormalizer()
	s, err := n.Normalize(b.Bytes(), textCT)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Subs) > DefaultMaxSubs || len(n.slots) > DefaultMaxSubs {
		t.Errorf("%d sub-series (%d slots), cap %d", len(s.Subs), len(n.slots), DefaultMaxSubs)
	}
	if !strings.Contains(strings.Join(s.Warnings, "\n"), "too many models/engines") {
		t.Errorf("warnings %q", s.Warnings)
	}
}

// TestNULLineStart: a NUL byte at the start of a line (which the text
// lexer takes for the end of the input) fails the scrape with a message
// naming the line, instead of a silent partial read; a NUL inside a label
// value is still read (and escaped).
func TestNULLineStart(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("..", "testdata", "dumps", "Ahasannn-hardware-aware-router__v0.11.0_full.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(body, []byte("\n"))
	for _, at := range []int{0, len(lines) / 3} {
		var b []byte
		for i, l := range lines {
			if i == at {
				b = append(b, 0)
			}
			b = append(b, l...)
		}
		snap, err := NewNormalizer().Normalize(b, "text/plain; version=0.0.4")
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("a NUL byte starts line %d", at+1)) {
			t.Errorf("NUL at line %d: %v (%v samples read)", at+1, err, snap)
		}
	}
	snap, err := NewNormalizer().Normalize([]byte("vllm:num_requests_running{model_name=\"a\x00b\"} 1\n"), "text/plain; version=0.0.4")
	if err != nil || snap.Samples != 1 {
		t.Errorf("NUL inside a label value: %v", err)
	}
}
