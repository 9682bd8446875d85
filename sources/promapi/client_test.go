package promapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
)

// Errors name the server and the query; a bad selector or URL is refused
// before any request; the extra headers reach the server.
func TestOpenErrors(t *testing.T) {
	var tenant string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant = r.Header.Get("X-Scope-OrgID")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		w.Write([]byte(`{"status":"error","errorType":"execution","error":"too many samples"}`))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	_, err := Open(context.Background(), Config{URL: srv.URL, Headers: map[string]string{"X-Scope-OrgID": "team-a"}})
	if err == nil || !strings.Contains(err.Error(), host) || !strings.Contains(err.Error(), "vllm:") || !strings.Contains(err.Error(), "too many samples") {
		t.Errorf("server error: %v", err)
	}
	if tenant != "team-a" {
		t.Errorf("X-Scope-OrgID %q", tenant)
	}
	// A server that does not answer: the error names it, not its URL's
	// query values (a token some hosted servers take there).
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	_, err = Open(context.Background(), Config{URL: dead.URL + "/?api_key=s3cret"})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), strings.TrimPrefix(dead.URL, "http://")) {
		t.Errorf("unreachable server: %v", err)
	}
	for _, c := range []struct{ cfg Config }{
		{Config{URL: srv.URL, Selector: `{namespace="llm"`}},
		{Config{URL: srv.URL, Selector: `{__name__="up"}`}},
		{Config{URL: "ftp://x"}},
		{Config{URL: "http://user:secret@" + host}},
	} {
		_, err := Open(context.Background(), c.cfg)
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("%+v: %v", c.cfg, err)
		}
	}
}

// A rebuilt sample line drops the target's labels, sorts vLLM's and escapes
// their values as the text format wants.
func TestAppendSample(t *testing.T) {
	m := model.Metric{"__name__": "vllm:num_requests_running", "instance": "a:1", "job": "vllm", "pod": "p",
		"model_name": "m\"x\\y\nz", "engine": "0"}
	var scratch []labelPair
	got := string(appendSample(nil, m, 3, &scratch))
	want := `vllm:num_requests_running{engine="0",model_name="m\"x\\y\nz"} 3` + "\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
