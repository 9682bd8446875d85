package sources

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Every way a scrape fails, made for real (refused port, DNS through the
// loopback resolver, hangs, 404, HTML, oversize bodies, 401/403, an
// untrusted certificate), is classified from the message the fetcher
// gives: the advice for a down endpoint follows it.
func TestClassifyRealErrors(t *testing.T) {
	const short = time.Second
	quick, patient := testFetcher(t, short), testFetcher(t, 5*time.Minute)
	kinds := map[string]FailKind{
		"refused": FailRefused, "dns": FailDNS, "hang": FailTimeout, "slow drip": FailTimeout,
		"404": FailNotFound, "500": FailHTTP, "html": FailHTML, "html as text": FailHTML,
		"oversize": FailTooLarge, "gzip bomb": FailTooLarge,
	}
	targets := badTargets(t, short)
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(tlsSrv.Close)
	targets = append(targets,
		struct{ name, url, want string }{"401", serve(t, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", http.StatusUnauthorized)
		}), ""},
		struct{ name, url, want string }{"403", serve(t, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", http.StatusForbidden)
		}), ""},
		struct{ name, url, want string }{"tls", tlsSrv.URL + "/metrics", ""})
	kinds["401"], kinds["403"], kinds["tls"] = FailAuth, FailAuth, FailTLS
	seen := map[string]bool{}
	for _, bt := range targets {
		want, ok := kinds[bt.name]
		if !ok {
			continue
		}
		seen[bt.name] = true
		t.Run(bt.name, func(t *testing.T) {
			t.Parallel()
			f := patient
			if want == FailTimeout {
				f = quick
			}
			st := FetchState{Buf: new(bytes.Buffer)}
			defer st.Close()
			defer f.Release(&st)
			_, _, err := f.FetchInto(context.Background(), bt.url, &st)
			if err == nil {
				t.Fatal("no error")
			}
			if got := Classify(err.Error()); got != want {
				t.Errorf("%q classified %d, want %d", err, got, want)
			}
		})
	}
	if len(seen) != len(kinds) {
		t.Errorf("cases %v, want all of %v", seen, kinds)
	}
	if Classify("parse error at line 3") != FailOther || Classify("") != FailOther {
		t.Error("an unknown message is FailOther")
	}
}
