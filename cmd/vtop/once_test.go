package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vtop-dev/vtop/ui/report"
)

// With nothing answering, --once reports UNKNOWN after a few polls of
// every target instead of waiting its whole window, and its header says
// why (the finding about the outage does not contradict it).
func TestOnceNoTargetAnswers(t *testing.T) {
	dead1, dead2 := deadAddr(t), deadAddr(t)
	code, out, _ := runArgs(t, nil, "--once", "-w", "10m", "-i", "100ms", dead1, dead2)
	if code != int(report.Unknown) {
		t.Errorf("exit %d\n%s", code, out)
	}
	for _, want := range []string{"stopped after", "of 10m: no target answered 3 polls", "status UNKNOWN (no target answered", "connection refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runArgs(t, nil, "--once", "-o", "json", "-w", "10m", "-i", "100ms", dead1)
	var r struct {
		Status struct {
			Code     int  `json:"code"`
			NoAnswer bool `json:"no_target_answered"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 3 || r.Status.Code != 3 || !r.Status.NoAnswer {
		t.Errorf("json: exit %d, %+v, %v\n%s", code, r.Status, err, out)
	}
}

// hitServer serves a small vLLM exposition and reports each scrape.
func hitServer(t *testing.T) (string, <-chan struct{}) {
	hits := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1\nvllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 0\nvllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.2\n")
		select {
		case hits <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), hits
}

// Interrupted (SIGINT: the context ends), --once prints what it saw,
// says it was cut short, and takes its status from it: an endpoint down
// is a warning although no hold could pass in that time.
func TestOnceInterrupted(t *testing.T) {
	good, hits := hitServer(t)
	dead := deadAddr(t)
	for _, c := range []struct {
		targets []string
		want    report.Status
	}{{[]string{good, dead}, report.Warning}, {[]string{good}, report.OK}} {
		o, _, err := resolve(append([]string{"--once", "-w", "10m", "-i", "100ms"}, c.targets...), func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for range 3 { // three scrapes of the good target, then the signal
				<-hits
			}
			cancel()
		}()
		var out bytes.Buffer
		code := runOnce(ctx, o, &out, io.Discard, slog.New(slog.NewTextHandler(io.Discard, nil)))
		cancel()
		if code != int(c.want) || !strings.Contains(out.String(), "interrupted after") || !strings.Contains(out.String(), "of 10m") ||
			!strings.Contains(out.String(), "status "+strings.ToUpper(c.want.String())) {
			t.Errorf("%v: exit %d, want %d:\n%s", c.targets, code, c.want, out.String())
		}
		for len(hits) > 0 {
			<-hits
		}
	}
}
