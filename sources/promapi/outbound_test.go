package promapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/vtop-dev/vtop/sources"
)

// TestRedirectDropsCredentials: a --prometheus server that redirects to
// another origin (another port, or plain http after https) does not pass
// the bearer token, the basic-auth password or any --header value on; a
// redirect within its origin keeps them, and a redirect loop ends.
func TestRedirectDropsCredentials(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for _, h := range []string{"Authorization", "X-Scope-OrgID", "X-Api-Key"} {
			if v := r.Header.Get(h); v != "" {
				leaked = append(leaked, h+": "+v)
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":[]}`))
	}))
	defer sink.Close()
	redirect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, sink.URL+r.URL.Path, http.StatusTemporaryRedirect)
	})
	plain := httptest.NewServer(redirect)
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(redirect)
	defer tlsSrv.Close()
	hdrs := map[string]string{"X-Scope-OrgID": "team-a", "X-Api-Key": "hdr-s3cret"}
	for _, hc := range []sources.HTTPConfig{{BearerToken: "tok-s3cret", InsecureSkipVerify: true}, {BasicUser: "u", BasicPassword: "pw-s3cret", InsecureSkipVerify: true}} {
		f, err := sources.NewFetcher(hc)
		if err != nil {
			t.Fatal(err)
		}
		for _, from := range []string{plain.URL, tlsSrv.URL} {
			_, err := Open(context.Background(), Config{URL: from, Headers: hdrs, Fetcher: f})
			if err == nil || !strings.Contains(err.Error(), "no vLLM series") {
				t.Errorf("%s: %v", from, err)
			}
		}
	}
	if len(leaked) > 0 {
		t.Errorf("the redirected requests carried %q", leaked)
	}
	// Within its origin a redirect keeps them (a path prefix moved).
	var got []string
	same := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/old/") {
			http.Redirect(w, r, strings.TrimPrefix(r.URL.Path, "/old"), http.StatusTemporaryRedirect)
			return
		}
		mu.Lock()
		got = append(got, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Scope-OrgID"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","data":[]}`))
	}))
	defer same.Close()
	f, _ := sources.NewFetcher(sources.HTTPConfig{BearerToken: "tok"})
	Open(context.Background(), Config{URL: same.URL + "/old", Headers: hdrs, Fetcher: f})
	if len(got) == 0 || got[0] != "Bearer tok|team-a" {
		t.Errorf("same-origin redirect: %q", got)
	}
	// A loop ends after a few hops, with an error naming the server.
	var hops int
	loop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hops++
		mu.Unlock()
		http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer loop.Close()
	_, err := Open(context.Background(), Config{URL: loop.URL + "/?api_key=q-s3cret"})
	if err == nil || !strings.Contains(err.Error(), "too many redirects") || strings.Contains(err.Error(), "s3cret") || hops > 4 {
		t.Errorf("redirect loop: %d hops, %v", hops, err)
	}
}
