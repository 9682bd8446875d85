package sources

import (
	"errors"
	"fmt"
	"testing"
)

// The API server's responses: inference handlers only, summed over
// handlers and methods by status, in either the grouped or the ungrouped
// form; /metrics, /v1/models and unmatched paths ("none": a typo'd URL's
// 404) are not counted, and an endpoint without the family has none
// (missing is not zero).
func TestHTTPStatusCounts(t *testing.T) {
	const engine = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 1
`
	body := engine + `# HELP http_requests_total Total number of requests by method, status and handler.
# TYPE http_requests_total counter
http_requests_total{handler="/v1/chat/completions",method="POST",status="2xx"} 10.0
http_requests_total{handler="/v1/chat/completions",method="POST",status="4xx"} 3.0
http_requests_total{handler="/v1/completions",method="POST",status="2xx"} 5.0
http_requests_total{handler="/metrics",method="GET",status="2xx"} 100.0
http_requests_total{handler="/v1/models",method="GET",status="2xx"} 27.0
http_requests_total{handler="none",method="POST",status="4xx"} 7.0
# HELP http_requests_created Total number of requests by method, status and handler.
# TYPE http_requests_created gauge
http_requests_created{handler="/v1/chat/completions",method="POST",status="2xx"} 1.7e9
`
	for _, c := range []struct {
		name, body, want string
	}{
		{"grouped", body, "[{2xx 15} {4xx 3}]"},
		{"ungrouped", engine + `# TYPE http_requests_total counter
http_requests_total{handler="/v1/completions",method="POST",status="429"} 2
http_requests_total{handler="/v1/completions",method="POST",status="200"} 8
http_requests_total{handler="/v1/embeddings",method="POST",status="400"} 1
http_requests_total{handler="/v1/completions",method="POST",status="400"} 4
`, "[{200 8} {400 5} {429 2}]"},
		{"absent", engine, "[]"},
		{"only non-inference handlers", engine + `http_requests_total{handler="/health",method="GET",status="2xx"} 8
`, "[]"},
	} {
		s, err := norm(t, c.body)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := "["
		for i, h := range s.HTTP {
			if i > 0 {
				got += " "
			}
			got += fmt.Sprintf("{%s %g}", h.Label, h.Value)
		}
		got += "]"
		if got != c.want {
			t.Errorf("%s: HTTP %s, want %s", c.name, got, c.want)
		}
		if c.want == "[]" && s.HTTP != nil {
			t.Errorf("%s: HTTP %v, want nil (not counted is not zero)", c.name, s.HTTP)
		}
	}
	// Any FastAPI app counts its requests so: that alone is not vLLM.
	_, err := norm(t, `# TYPE http_requests_total counter
http_requests_total{handler="/v1/completions",method="POST",status="2xx"} 8
`)
	if !errors.Is(err, ErrNotVLLM) {
		t.Errorf("an app serving only http_requests_total: %v, want ErrNotVLLM", err)
	}
}
