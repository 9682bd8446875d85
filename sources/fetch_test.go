package sources

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/internal/holdport"
)

func v010Dump(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "dumps", "armandossrecife-vllm-server-api-chat__v0.10.1-ngc25.09_full.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	// Bound but never listening: a connect is refused for the whole test,
	// and no other process can take the port meanwhile (one closed after
	// Listen was taken by another test's server on a busy host, which
	// answered 404).
	addr, release, err := holdport.Hold(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return addr.String()
}

// loopbackResolver sends DNS queries to a closed loopback port, so a lookup
// fails without any traffic leaving the machine.
func loopbackResolver(t *testing.T) *net.Resolver {
	dead := closedPort(t)
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", dead)
	}}
}

func gzipBomb(t *testing.T, size int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	chunk := make([]byte, 1<<20)
	for i := 0; i < size>>20; i++ {
		zw.Write(chunk)
	}
	zw.Close()
	return b.Bytes()
}

// badTargets are the hostile and broken endpoints of the issue, each with
// the error the operator must see.
func badTargets(t *testing.T, timeout time.Duration) []struct{ name, url, want string } {
	dump := v010Dump(t)
	bomb := gzipBomb(t, 32<<20) // 32 MiB of zeros in ~32 KiB, four times the cap
	var big bytes.Buffer
	for i := 0; i < 100_000; i++ {
		fmt.Fprintf(&big, "vllm:num_requests_running{model_name=\"m%d\"} 1\n", i)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	return []struct{ name, url, want string }{
		{"refused", "http://" + closedPort(t) + "/metrics", "connection refused"},
		{"dns", "http://vtop-test-host.invalid:8000/metrics", "DNS lookup of vtop-test-host.invalid failed"},
		{"hang", serve(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		}), "timed out after " + timeout.String()},
		{"slow drip", serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", textCT)
			for i := 0; i < len(dump); i++ {
				if _, err := w.Write(dump[i : i+1]); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-time.After(20 * time.Millisecond):
				case <-r.Context().Done():
					return
				case <-stop:
					return
				}
			}
		}), "timed out after " + timeout.String() + " reading the body"},
		{"404", serve(t, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }), "HTTP 404 Not Found (is the path /metrics"},
		{"500", serve(t, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "multiprocess dir on NFS", http.StatusInternalServerError)
		}), "HTTP 500 Internal Server Error"},
		{"html", serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, "<!DOCTYPE html><html><body>Grafana</body></html>")
		}), "served an HTML page"},
		{"html as text", serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "<html><body>login</body></html>")
		}), "served an HTML page"},
		{"oversize", serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", textCT)
			for i := 0; i < 200; i++ {
				w.Write(dump)
			}
		}), "body larger than 8 MiB after decompression"},
		{"gzip bomb", serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", textCT)
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb)
		}), "body larger than 8 MiB after decompression"},
		{"truncated", serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", textCT)
			w.Write(dump[:len(dump)/2+17])
		}), "parse error"},
		{"100k series", serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", textCT)
			w.Write(big.Bytes())
		}), "too many samples: more than 50000"},
		{"not vllm", serve(t, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "tgi_queue_size 1\ntgi_batch_current_size 4\n")
		}), "looks like Hugging Face TGI"},
		{"hostile error text", serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-\x1b[31mevil")
			fmt.Fprint(w, "vllm:num_requests_running 1\n")
		}), "malformed MIME header line"},
	}
}

func testFetcher(t *testing.T, timeout time.Duration) *Fetcher {
	f, err := NewFetcher(HTTPConfig{Timeout: timeout, MaxBody: 8 << 20, Resolver: loopbackResolver(t)})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestBadTargets: each broken endpoint gives one clear, printable line,
// through the HTTP client and through a loopback target's own connection.
// Only the cases about timing out run under the short timeout: a size or
// content check must not turn into a timeout on a loaded 2-core machine
// (reading 8 MiB under -race there took over a second).
func TestBadTargets(t *testing.T) {
	const short = time.Second
	quick, patient := testFetcher(t, short), testFetcher(t, 5*time.Minute)
	bad := badTargets(t, short)
	for _, own := range []bool{false, true} {
		for _, bt := range bad {
			name := bt.name
			if own {
				name += " (own connection)"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				f := patient
				if strings.Contains(bt.want, "timed out") {
					f = quick
				}
				checkBadTarget(t, f, bt.url, bt.want, own)
			})
		}
	}
}

func checkBadTarget(t *testing.T, f *Fetcher, url, want string, own bool) {
	st := FetchState{Buf: new(bytes.Buffer), Plain: own}
	defer st.Close()
	defer f.Release(&st)
	body, ct, err := f.FetchInto(context.Background(), url, &st)
	if err == nil {
		_, err = NewNormalizer().Normalize(body, ct)
	}
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, want) {
		t.Errorf("error %q does not say %q", msg, want)
	}
	if strings.ContainsAny(msg, "\n\r") || len(msg) > 240 {
		t.Errorf("not one short line: %q", msg)
	}
	assertPrintable(t, msg)
}

// TestBadTargetsDoNotStallOthers polls a good endpoint beside every bad one:
// the good one keeps updating at its interval, each bad one reports its
// error under its own name, and nothing panics.
func TestBadTargetsDoNotStallOthers(t *testing.T) {
	dump := v010Dump(t)
	good := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", textCT)
		w.Write(dump)
	})
	// Everything here competes for 2 cores under -race: a generous timeout
	// keeps the size-limit cases from turning into timeouts.
	const timeout = 3 * time.Second
	bad := badTargets(t, timeout)
	targets := []Target{{Name: "good", URL: good}}
	for _, b := range bad {
		targets = append(targets, Target{Name: b.name, URL: b.url})
	}
	cfg := DefaultPollerConfig()
	cfg.Interval = 100 * time.Millisecond
	p := NewPoller(targets, testFetcher(t, timeout), cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); p.Run(ctx) }()

	// Run until every bad target has reported an error (and at least 3 s),
	// so a slow machine makes the test longer, not flaky.
	start := time.Now()
	goodResults := 0
	lastErr := map[string]string{}
	var batch []Indexed
	for time.Since(start) < 3*time.Second || len(lastErr) < len(bad) {
		if time.Since(start) > 60*time.Second {
			t.Fatalf("after 60 s only %d of %d bad targets reported", len(lastErr), len(bad))
		}
		select {
		case <-p.Mailbox().Ready():
		case <-time.After(100 * time.Millisecond):
		}
		batch = p.Mailbox().Take(batch[:0])
		for _, s := range batch {
			if s.Target != targets[s.Index].Name {
				t.Fatalf("result of %d carries name %q", s.Index, s.Target)
			}
			if s.Index == 0 {
				if s.Err != nil {
					t.Fatalf("good target failed: %v", s.Err)
				}
				goodResults++
			} else if s.Err != nil {
				lastErr[s.Target] = s.Err.Error()
			}
		}
	}
	elapsed := time.Since(start)
	cancel()
	wg.Wait()
	// At 100 ms the good target polls ~10×/s; a stalled one would get a
	// handful. The bound is loose because -race and a busy 2-core machine
	// slow everything.
	if want := int(elapsed / cfg.Interval / 4); goodResults < want {
		t.Errorf("good target polled %d times in %v beside hostile ones, want ≥ %d", goodResults, elapsed.Round(time.Millisecond), want)
	}
	for _, b := range bad {
		if !strings.Contains(lastErr[b.name], b.want) {
			t.Errorf("%s: last error %q, want %q", b.name, lastErr[b.name], b.want)
		}
	}
}

// TestAuthHeaders: each kind of credentials goes out, through the client
// and over a loopback target's own connection (whose request is rendered
// once: a rotated token file renders it again).
func TestAuthHeaders(t *testing.T) {
	var got []string
	var mu sync.Mutex
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization")+"|"+r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		fmt.Fprint(w, "vllm:num_requests_running 1\n")
	})
	tok := filepath.Join(t.TempDir(), "token")
	for _, own := range []bool{false, true} {
		for _, cfg := range []HTTPConfig{{BearerTokenFile: tok}, {BearerToken: "envtok"}, {BasicUser: "u", BasicPassword: "p"}} {
			f, err := NewFetcher(cfg)
			if err != nil {
				t.Fatal(err)
			}
			st := FetchState{Buf: new(bytes.Buffer), Plain: own}
			tokens := []string{""}
			if cfg.BearerTokenFile != "" {
				tokens = []string{"s3cret\n", "s3cret\n", "rotated"}
			}
			for _, tk := range tokens {
				if tk != "" {
					os.WriteFile(tok, []byte(tk), 0o600)
				}
				if _, _, err := f.FetchInto(context.Background(), url, &st); err != nil {
					t.Fatal(err)
				}
				f.Release(&st)
			}
			st.Close()
		}
	}
	want := "Bearer s3cret|gzip,Bearer s3cret|gzip,Bearer rotated|gzip,Bearer envtok|gzip,Basic dTpw|gzip," +
		"Bearer s3cret|identity,Bearer s3cret|identity,Bearer rotated|identity,Bearer envtok|identity,Basic dTpw|identity"
	if strings.Join(got, ",") != want {
		t.Errorf("headers %q, want %q", strings.Join(got, ","), want)
	}
}

// TestRedirectKeepsCredentials: a redirect that downgrades https to http or
// leaves the target's origin gets no Authorization header, and the redirect
// is reported (FetchState.Redirect) so the endpoint can show it.
func TestRedirectKeepsCredentials(t *testing.T) {
	var mu sync.Mutex
	var got []string
	sink := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprint(w, "vllm:num_requests_running 1\n")
	})
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, sink, http.StatusFound)
	}))
	t.Cleanup(tlsSrv.Close)
	plain := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, sink, http.StatusMovedPermanently)
	})
	for _, cfg := range []HTTPConfig{{BearerToken: "envtok", InsecureSkipVerify: true}, {BasicUser: "u", BasicPassword: "p", InsecureSkipVerify: true}} {
		f, err := NewFetcher(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, from := range []string{tlsSrv.URL + "/metrics", plain} {
			for _, own := range []bool{false, true} { // through the client; a loopback target's own connection
				st := FetchState{Buf: new(bytes.Buffer), Plain: own}
				if _, _, err := f.FetchInto(context.Background(), from, &st); err != nil {
					t.Fatal(err)
				}
				st.Close()
				if !strings.HasPrefix(sink, st.Redirect) || st.Redirect == "" {
					t.Errorf("%s: redirect shown as %q, want %q", from, st.Redirect, sink)
				}
			}
		}
	}
	if strings.Join(got, "") != "" || len(got) != 8 {
		t.Errorf("the redirected requests carried %q", got)
	}
	// A redirect to where nothing answers says so in the error.
	gone := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+closedPort(t)+"/metrics?token=s3cret", http.StatusFound)
	})
	f0, _ := NewFetcher(HTTPConfig{})
	_, _, err := f0.FetchInto(context.Background(), gone, &FetchState{Buf: new(bytes.Buffer)})
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "after a redirect to http://127.0.0.1:") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("redirect to a closed port: %v", err)
	}
	// Within one origin the credentials stay (a path move is harmless).
	same := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.Redirect(w, r, "/metrics", http.StatusFound)
			return
		}
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprint(w, "vllm:num_requests_running 1\n")
	})
	f, _ := NewFetcher(HTTPConfig{BearerToken: "envtok"})
	st := FetchState{Buf: new(bytes.Buffer)}
	if _, _, err := f.FetchInto(context.Background(), strings.TrimSuffix(same, "/metrics")+"/old", &st); err != nil {
		t.Fatal(err)
	}
	if got[len(got)-1] != "Bearer envtok" || st.Redirect == "" {
		t.Errorf("same-origin redirect: auth %q, shown %q", got[len(got)-1], st.Redirect)
	}
}

func TestGzipAndNegotiation(t *testing.T) {
	dump := v010Dump(t)
	var accept string
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		w.Header().Set("Content-Type", textCT)
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		zw.Write(dump)
		zw.Close()
	})
	f, _ := NewFetcher(HTTPConfig{})
	var buf bytes.Buffer
	body, ct, err := f.Fetch(context.Background(), url, &buf)
	if err != nil || !bytes.Equal(body, dump) || ct != textCT {
		t.Fatalf("gzip fetch: err %v, %d bytes, ct %q", err, len(body), ct)
	}
	if !strings.HasPrefix(accept, "text/plain;version=0.0.4") || strings.Contains(accept, "openmetrics") {
		t.Errorf("Accept %q: want the text format, without OpenMetrics (prometheus_client picks it whenever listed)", accept)
	}
}

func TestParseTarget(t *testing.T) {
	cases := []struct{ in, url, name, err string }{
		{"localhost:8000", "http://localhost:8000/metrics", "localhost:8000", ""},
		{"http://10.0.0.5:8000", "http://10.0.0.5:8000/metrics", "http://10.0.0.5:8000", ""},
		{"https://llm.internal/v1/metrics", "https://llm.internal/v1/metrics", "https://llm.internal/v1/metrics", ""},
		{"[::1]:9000", "http://[::1]:9000/metrics", "[::1]:9000", ""},
		{"localhost", "", "", "give a port"},
		{"ftp://x:1", "", "", "scheme must be http or https"},
		{"http://u:p@h:1", "", "", "credentials in the URL are not accepted"},
		{"h:99999", "", "", "bad port"},
		// A token in the query string is sent, never shown.
		{"http://h:1/metrics?token=s3cret&x=1", "http://h:1/metrics?token=s3cret&x=1", "http://h:1/metrics?token=xxxxx&x=xxxxx", ""},
		{"ftp://h:1/?token=s3cret", "", "", "scheme must be http or https"},
		{"http://h:99999/?token=s3cret", "", "", "bad port"},
	}
	for _, c := range cases {
		got, err := ParseTarget(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.in, err, c.err)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%s: the error shows the secret: %v", c.in, err)
			}
			continue
		}
		if err != nil || got.URL != c.url || got.Name != c.name {
			t.Errorf("%s: %+v %v", c.in, got, err)
		}
	}
	if tg, _ := ParseTarget("127.0.0.1:8000"); !tg.IsLocal() {
		t.Error("127.0.0.1 not local")
	}
}

func TestBackoff(t *testing.T) {
	want := []time.Duration{1, 1, 2, 4, 8, 16, 30, 30}
	for i, w := range want {
		if got := backoff(time.Second, 30*time.Second, i+1); got != w*time.Second {
			t.Errorf("failure %d: %v, want %v", i+1, got, w*time.Second)
		}
	}
}

// A connect that fails at once is not a timeout, whatever net.Error's
// Timeout says of its errno: EAGAIN (no free local port) read as "timed out
// after 3s" on a scrape that took 0.2 ms.
func TestDescribeNetErrErrno(t *testing.T) {
	op := func(e error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", e)}
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{op(syscall.EAGAIN), "no free local port"},
		{op(syscall.EADDRNOTAVAIL), "no free local port"},
		{op(syscall.ECONNREFUSED), "connection refused"},
		{op(syscall.ETIMEDOUT), "timed out after 3s"},
		{op(os.ErrDeadlineExceeded), "timed out after 3s"},
		{context.DeadlineExceeded, "timed out after 3s"},
	} {
		if got := describeNetErr(c.err, 3*time.Second).Error(); !strings.Contains(got, c.want) {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
}
