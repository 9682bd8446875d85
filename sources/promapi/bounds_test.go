package promapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestFederationBounds: an answer naming more targets than the bound
// keeps the first ones and counts the rest; one with more distinct series
// than the limit, or a line longer than maxFedLine, is refused (a single
// 250 MB line cost 3.4 GB; 1,000,000 replicas 6 GB).
func TestFederationBounds(t *testing.T) {
	f := newFederation([]string{"vllm:num_requests_running"}, nil)
	f.now, f.maxTargets = 5000, 3
	var b strings.Builder
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "vllm:num_requests_running{instance=\"r%d:1\",job=\"vllm\"} 1 1000\n", i)
		fmt.Fprintf(&b, "vllm:num_requests_waiting{instance=\"r%d:1\",job=\"vllm\"} 1 1000\n", i)
	}
	if err := f.read(strings.NewReader(b.String()), 1, false); err != nil {
		t.Fatal(err)
	}
	if len(f.byKey) != 3 || f.dropped != 14 {
		t.Errorf("%d targets kept, %d lines dropped; want 3 and 14", len(f.byKey), f.dropped)
	}
	f = newFederation([]string{"vllm:num_requests_running"}, nil)
	f.maxSeries = 5
	b.Reset()
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "vllm:x{instance=\"a:1\",job=\"vllm\",le=\"%d\"} 1\n", i)
	}
	if err := f.read(strings.NewReader(b.String()), 1, false); err == nil || !strings.Contains(err.Error(), "more than 5 distinct series") {
		t.Errorf("series bound: %v", err)
	}
	f = newFederation(nil, nil)
	long := "vllm:x{instance=\"a:1\",model_name=\"" + strings.Repeat("m", 3<<20) + "\"} 1\n"
	if err := f.read(strings.NewReader(long), 1, false); !errors.Is(err, errLongLine) {
		t.Errorf("a 3 MiB line: %v", err)
	}
}

// TestFederationFutureStamp: a running gauge stamped in the future is
// taken as of the answer, so the replica's next scrape is not held back
// for the length of the skew.
func TestFederationFutureStamp(t *testing.T) {
	f := newFederation([]string{"vllm:num_requests_running"}, nil)
	f.now = 5000
	year := int64(365 * 24 * 3600 * 1000)
	if err := f.read(strings.NewReader(fmt.Sprintf("vllm:num_requests_running{instance=\"a:1\",job=\"vllm\"} 1 %d\n", 5000+year)), 1, false); err != nil {
		t.Fatal(err)
	}
	for _, tg := range f.byKey {
		if tg.stamp != 5000 {
			t.Errorf("stamp %d, want the answer's 5000", tg.stamp)
		}
	}
}

// fakeAPI answers the few API calls Open makes, with a running gauge whose
// two samples are gap apart.
func fakeAPI(t *testing.T, gap time.Duration) string {
	now := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		q := r.Form.Get("query")
		ok := func(data any) {
			json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
		}
		lbl := map[string]string{"__name__": "vllm:num_requests_running", "job": "vllm", "instance": "a:1"}
		switch {
		case strings.HasSuffix(r.URL.Path, "/label/__name__/values"):
			if strings.Contains(r.Form.Get("match[]"), "DCGM") {
				ok([]string{})
			} else {
				ok([]string{"vllm:num_requests_running"})
			}
		case strings.HasPrefix(q, "count("):
			ok(map[string]any{"resultType": "vector", "result": []any{map[string]any{"metric": map[string]string{}, "value": []any{float64(now.Unix()), "1"}}}})
		case strings.HasPrefix(q, "topk("):
			ok(map[string]any{"resultType": "vector", "result": []any{map[string]any{"metric": lbl, "value": []any{float64(now.Unix()), "1"}}}})
		case strings.HasSuffix(q, "[5m]"):
			t0 := now.Add(-gap)
			ok(map[string]any{"resultType": "matrix", "result": []any{map[string]any{"metric": lbl,
				"values": []any{[]any{float64(t0.Unix()), "1"}, []any{float64(now.Unix()), "1"}}}}})
		case strings.HasSuffix(r.URL.Path, "/metadata"):
			ok(map[string]any{})
		default:
			ok(map[string]any{"resultType": "vector", "result": []any{}})
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestIntervalBound: samples years apart are no scrape interval: Open
// says so instead of cutting the backfill into chunks whose arithmetic
// overflows; a sane interval still opens.
func TestIntervalBound(t *testing.T) {
	_, err := Open(context.Background(), Config{URL: fakeAPI(t, 5*365*24*time.Hour), QueryOnly: true})
	if err == nil || !strings.Contains(err.Error(), "more than the 1h0m0s a scrape interval can be") {
		t.Errorf("samples 5 years apart: %v", err)
	}
	c, err := Open(context.Background(), Config{URL: fakeAPI(t, 15*time.Second), QueryOnly: true})
	if err != nil || c.Interval() != 15*time.Second {
		t.Errorf("samples 15 s apart: %v", err)
	}
}
