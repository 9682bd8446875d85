package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/vtop-dev/vtop/internal/holdport"
	"github.com/vtop-dev/vtop/ui/report"
)

// movingServer serves a V1 engine whose counters and TTFT histogram advance
// on every scrape, with a hostile model name.
func movingServer(t *testing.T, model string) string {
	t.Helper()
	var mu sync.Mutex
	n := 0.0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		// The model name goes out raw: control bytes on the wire, not escapes.
		l := `engine="0",model_name="` + model + `"`
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# HELP vllm:num_requests_running Number of requests in model execution batches.\n")
		fmt.Fprintf(w, "vllm:num_requests_running{%s} 5\nvllm:num_requests_waiting{%s} 1\nvllm:kv_cache_usage_perc{%s} 0.42\n", l, l, l)
		fmt.Fprintf(w, "vllm:generation_tokens_total{%s} %g\nvllm:prompt_tokens_total{%s} %g\n", l, 100*k, l, 300*k)
		fmt.Fprintf(w, "vllm:request_success_total{%s,finished_reason=\"stop\"} %g\n", l, 2*k)
		fmt.Fprintf(w, "vllm:request_success_total{%s,finished_reason=\"abort\"} 0\n", l)
		for _, b := range []struct {
			le string
			v  float64
		}{{"0.1", k}, {"0.5", 2 * k}, {"+Inf", 2 * k}} {
			fmt.Fprintf(w, "vllm:time_to_first_token_seconds_bucket{%s,le=%q} %g\n", l, b.le, b.v)
		}
		fmt.Fprintf(w, "vllm:time_to_first_token_seconds_count{%s} %g\nvllm:time_to_first_token_seconds_sum{%s} %g\n", l, 2*k, l, 0.3*k)
		fmt.Fprintf(w, "vllm:cache_config_info{block_size=\"16\",engine=\"0\",num_gpu_blocks=\"1000\"} 1\n")
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func deadAddr(t *testing.T) string {
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

func noEnv(string) string { return "" }

func runArgs(t *testing.T, getenv func(string) string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if getenv == nil {
		getenv = func(k string) string {
			if k == "XDG_CONFIG_HOME" {
				return t.TempDir() // never read the developer's own config
			}
			return ""
		}
	}
	code := run(args, &out, &errb, getenv)
	return code, out.String(), errb.String()
}

func assertPrintable(t *testing.T, s string) {
	t.Helper()
	for _, r := range s {
		if r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r)) {
			t.Fatalf("unsafe rune %U reached the output", r)
		}
	}
}

func TestOnceText(t *testing.T) {
	good := movingServer(t, "llama\x1b[2J\u202e")
	code, out, errOut := runArgs(t, nil, "--once", "-w", "1500ms", "-i", "250ms", good)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, want := range []string{good, "[UP", "latency", "TTFT p50", "cache", "KV 42% of 16k tokens", "queue", "running 5",
		"throughput", "gen ", `llama\x1b[2J\u{202e}`, "fleet: 1/1 up", "status OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	assertPrintable(t, out)
	// 100 tokens per scrape every 250 ms is 400 tok/s, give or take timer jitter.
	if !regexp.MustCompile(`gen (3[6-9]\d|4[0-4]\d) tok/s`).MatchString(out) {
		t.Errorf("generation rate off:\n%s", out)
	}
}

func TestOnceStatuses(t *testing.T) {
	good, dead := movingServer(t, "m"), deadAddr(t)
	code, out, _ := runArgs(t, nil, "--once", "-w", "600ms", "-i", "200ms", good, dead)
	if code != int(report.Warning) || !strings.Contains(out, "connection refused") || !strings.Contains(out, "status WARNING") {
		t.Errorf("one down: exit %d\n%s", code, out)
	}
	code, out, _ = runArgs(t, nil, "--once", "-w", "600ms", "-i", "200ms", dead)
	if code != int(report.Unknown) || !strings.Contains(out, "fleet: 0/1 up") {
		t.Errorf("none reachable: exit %d\n%s", code, out)
	}
}

func TestOnceJSON(t *testing.T) {
	good, dead := movingServer(t, "m"), deadAddr(t)
	code, out, _ := runArgs(t, nil, "--once", "-o", "json", "-w", "1s", "-i", "250ms", good, dead)
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON (%v):\n%s", err, out)
	}
	if r["schema"] != report.SchemaVersion || code != 1 {
		t.Errorf("schema %v exit %d", r["schema"], code)
	}
	st := r["status"].(map[string]any)
	if st["code"].(float64) != 1 || st["text"] != "warning" {
		t.Errorf("status %v", st)
	}
	eps := r["endpoints"].([]any)
	up := eps[0].(map[string]any)
	lat := up["stats"].(map[string]any)["latency"].(map[string]any)
	if up["state"] != "up" || lat["ttft"].(map[string]any)["p50"] == nil {
		t.Errorf("up endpoint: %v", up)
	}
	// No inter-token histogram is exposed: null, never 0.
	if lat["inter_token"].(map[string]any)["p95"] != nil {
		t.Errorf("missing ITL encoded as %v", lat["inter_token"])
	}
	down := eps[1].(map[string]any)
	// A loaded CI host out of local ports refuses the connect itself: the
	// error says so (TestDescribeNetErrErrno), never "timed out".
	if e := down["last_error"].(string); down["state"] != "down" || !strings.Contains(e, "connection refused") && !strings.Contains(e, "no free local port") {
		t.Errorf("down endpoint: %v", down)
	}
}

func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte("interval: 5s\nwindow: 2m\ntimeout: 4s\ntargets:\n  - a:1\n  - url: b:2\n    max_num_seqs: 256\n"), 0o644)
	env := map[string]string{"VTOP_CONFIG": cfg, "VTOP_WINDOW": "90s"}
	getenv := func(k string) string { return env[k] }

	o, _, err := resolve([]string{"--timeout", "2s"}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	// flag > env > file > default
	if o.timeout != 2*time.Second || o.window != 90*time.Second || o.interval != 5*time.Second || o.maxSamples != 50000 {
		t.Errorf("timeout %v window %v interval %v samples %d", o.timeout, o.window, o.interval, o.maxSamples)
	}
	if len(o.targets) != 2 || o.targets[1].MaxNumSeqs != 256 || o.targets[0].URL != "http://a:1/metrics" {
		t.Errorf("targets from file: %+v", o.targets)
	}
	// Command-line targets replace the file's, but keep its per-target facts.
	env["VTOP_TARGETS"] = "c:3,b:2"
	o, _, _ = resolve([]string{"d:4", "b:2"}, getenv)
	if len(o.targets) != 2 || o.targets[0].Name != "d:4" || o.targets[1].MaxNumSeqs != 256 {
		t.Errorf("flag targets: %+v", o.targets)
	}
	o, _, _ = resolve(nil, getenv)
	if len(o.targets) != 2 || o.targets[0].Name != "c:3" {
		t.Errorf("env targets: %+v", o.targets)
	}
	// No target anywhere: vLLM's default.
	o, _, _ = resolve(nil, func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return dir + "/none"
		}
		return ""
	})
	if len(o.targets) != 1 || o.targets[0].URL != "http://localhost:8000/metrics" {
		t.Errorf("default target: %+v", o.targets)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("intervall: 1s\n"), 0o644)
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--output", "xml"}, nil, "--output must be text, json or markdown"},
		{[]string{"--window", "1s", "--interval", "1s"}, nil, "must cover at least two polls"},
		{nil, map[string]string{"VTOP_INTERVAL": "soon"}, `VTOP_INTERVAL="soon"`},
		{nil, map[string]string{"VTOP_CONFIG": bad}, `unknown key "intervall"`},
		{nil, map[string]string{"VTOP_CONFIG": filepath.Join(dir, "absent.yaml")}, "config file"},
		{[]string{"http://user:pw@h:1"}, nil, "credentials in the URL are not accepted"},
		{[]string{"--bearer-token-file", "/x"}, map[string]string{"VTOP_BEARER_TOKEN": "t"}, "give the bearer token once"},
		{[]string{"--cert-file", "c.pem"}, nil, "--cert-file and --key-file go together"},
		{[]string{"--max-body", "lots"}, nil, "bad size"},
	}
	for _, c := range cases {
		getenv := func(k string) string {
			if k == "XDG_CONFIG_HOME" {
				return dir
			}
			return c.env[k]
		}
		code, _, errOut := runArgs(t, getenv, c.args...)
		if code != 3 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v %v: exit %d, stderr %q, want %q", c.args, c.env, code, errOut, c.want)
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	code, out, _ := runArgs(t, nil, "--version")
	if code != 0 || !strings.HasPrefix(out, "vtop ") {
		t.Errorf("--version: %d %q", code, out)
	}
	code, out, _ = runArgs(t, nil, "--help")
	for _, want := range []string{"Usage:", "Examples:", "--once", "VTOP_INTERVAL", "localhost:8000"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestAuthFromFileAndEnv(t *testing.T) {
	var got []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer tok-from-file" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "vllm:num_requests_running{model_name=\"m\"} 1\n")
	}))
	defer srv.Close()
	tok := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(tok, []byte("tok-from-file\n"), 0o600)
	code, out, _ := runArgs(t, nil, "--once", "-w", "400ms", "-i", "200ms", "--bearer-token-file", tok, srv.URL)
	if code != 0 {
		t.Errorf("token file: exit %d\n%s", code, out)
	}
	code, out, _ = runArgs(t, func(k string) string {
		if k == "VTOP_BEARER_TOKEN" {
			return "wrong"
		}
		return ""
	}, "--once", "-w", "400ms", "-i", "200ms", srv.URL)
	if code != 3 || !strings.Contains(out, "HTTP 401 Unauthorized (check --bearer-token-file / basic auth)") {
		t.Errorf("wrong token: exit %d\n%s", code, out)
	}
}
