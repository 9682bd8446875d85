package omtext

import "testing"

// The shapes prometheus_client writes for one registry in each format:
// the counter's family loses _total and gains its _created sample after
// each label set's value, a histogram's _created follows its _sum, a
// counter named without _total gets _total samples, untyped is unknown, a broken line stays where it was,
// timestamps turn from milliseconds to seconds, HELP escapes quotes.
func TestFromClassic(t *testing.T) {
	in := `# HELP vllm:prompt_tokens_total Number of "prefill" tokens.\\n
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 246.0
vllm:prompt_tokens_total{engine="1",model_name="m"} 7.0
# HELP vllm:prompt_tokens_created Number of "prefill" tokens.
# TYPE vllm:prompt_tokens_created gauge
vllm:prompt_tokens_created{engine="0",model_name="m"} 1.7e+09
vllm:prompt_tokens_created{engine="1",model_name="m"} 1.8e+09
# TYPE h histogram
h_bucket{le="1.0",x="a b"} 1.0
h_bucket{le="+Inf",x="a b"} 2.0
h_count{x="a b"} 2.0
h_sum{x="a b"} 3.5
# TYPE h_created gauge
h_created{x="a b"} 1.9e+09
# TYPE DCGM_FI_DEV_ROWS counter
DCGM_FI_DEV_ROWS{gpu="0"} 0 1700000000123
loose{a="}"} 1
DCGM_FI_X{gpu="0"} ERROR - FAILED TO CONVERT
`
	want := `# HELP vllm:prompt_tokens Number of \"prefill\" tokens.\\n
# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 246.0
vllm:prompt_tokens_created{engine="0",model_name="m"} 1.7e+09
vllm:prompt_tokens_total{engine="1",model_name="m"} 7.0
vllm:prompt_tokens_created{engine="1",model_name="m"} 1.8e+09
# TYPE h histogram
h_bucket{le="1.0",x="a b"} 1.0
h_bucket{le="+Inf",x="a b"} 2.0
h_count{x="a b"} 2.0
h_sum{x="a b"} 3.5
h_created{x="a b"} 1.9e+09
# TYPE DCGM_FI_DEV_ROWS counter
DCGM_FI_DEV_ROWS_total{gpu="0"} 0 1700000000.123
# TYPE loose unknown
loose{a="}"} 1
DCGM_FI_X{gpu="0"} ERROR - FAILED TO CONVERT
# EOF
`
	if got := string(FromClassic([]byte(in))); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
