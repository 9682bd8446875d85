package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aymanbagabas/go-udiff"
	"github.com/klauspost/compress/zstd"

	"github.com/vtop-dev/vtop/app"
	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/record"
)

// A --prometheus run (its backfill from a real Prometheus holding a
// simulated fleet's history) recorded, then replayed: the same findings at
// every evaluation, at the same instants, and the same --once report byte
// for byte. Nothing the run was given to authenticate (a header's value, a
// bearer token, a query value in the server's URL) is in the file.
func TestReplayOfPrometheusRun(t *testing.T) {
	span := 8 * time.Minute
	epoch := time.Now().Add(-span).Truncate(historyStep)
	h := simHistory(t, agreementFleet(), epoch, span, historyStep)
	server := startPrometheus(t, h, "")
	const orgID, token, queryValue = "0rg-tenant-s3cret", "b3arer-t0ken-s3cret", "qu3ry-s3cret"
	cfgDir := t.TempDir()
	env := func(k string) string {
		switch k {
		case "XDG_CONFIG_HOME":
			return cfgDir
		case "VTOP_BEARER_TOKEN":
			return token
		}
		return ""
	}
	dir := t.TempDir()
	args := func(path string) []string {
		return []string{"--once", "--prometheus", server + "/?key=" + queryValue, "--backfill", "10m", "--window", "60s",
			"--at", h.end.Format(time.RFC3339Nano), "--header", "X-Scope-OrgID: " + orgID, "--record", path}
	}

	evals := filepath.Join(dir, "evals.vtop")
	live := recordEvaluations(t, args(evals), env, nil)
	if len(live.findings[len(live.findings)-1]) == 0 {
		t.Fatal("no finding at the end of the live run: the comparison proves little")
	}
	pl := live.replayed(t, evals)
	if got := pl.Header().Prometheus; got == nil || !strings.Contains(got.URL, "key=REDACTED") || got.Backfill != record.Duration(10*time.Minute) {
		t.Errorf("the header's server: %+v", got)
	}

	// The --once report, as vtop prints it, and the replay's.
	once, logf := filepath.Join(dir, "once.vtop"), filepath.Join(dir, "vtop.log")
	code, out, errOut := runArgs(t, env, append(args(once), "-o", "json", "--log", logf)...)
	if errOut != "" {
		t.Fatalf("live: exit %d: %s", code, errOut)
	}
	rcode, rout, rerr := runArgs(t, nil, "replay", "--once", "-o", "json", once)
	if rerr != "" || rcode != code || rout != out {
		t.Fatalf("replay: exit %d (live %d), stderr %q\n--- live\n%s\n--- replay\n%s", rcode, code, rerr, out, rout)
	}

	// The --log, which has a line per request to the server, neither.
	logText, err := os.ReadFile(logf)
	if err != nil || !bytes.Contains(logText, []byte("prometheus request")) {
		t.Fatalf("--log has no request lines (%v)", err)
	}
	for _, secret := range []string{orgID, token, queryValue} {
		for _, line := range strings.Split(string(logText), "\n") {
			if strings.Contains(line, secret) {
				t.Errorf("--log holds %q: %s", secret, line)
			}
		}
	}
	// Exported, the replicas' series carry the names vtop gave them.
	ecode, om, eerr := runArgs(t, nil, "export", "--format", "openmetrics", once)
	if ecode != 0 || !regexp.MustCompile(`(?m)^vllm:num_requests_running\{[^}]*instance="thrashing"\} `).MatchString(om) {
		t.Errorf("export: exit %d %s\n%.2000s", ecode, eerr, om)
	}

	for _, f := range []string{evals, once} {
		text := recordingText(t, f)
		for _, secret := range []string{orgID, token, queryValue} {
			if bytes.Contains(text, []byte(secret)) {
				t.Errorf("%s holds %q", filepath.Base(f), secret)
			}
		}
		st, _ := os.Stat(f)
		t.Logf("%s: %d evaluations, %d bytes for 3 replicas × %v at %v", filepath.Base(f), len(live.times), st.Size(), span, historyStep)
	}
}

// Live, the TUI's pipeline on a real Prometheus scraping a running `vtop
// sim` fleet and its dcgm-exporter endpoint: the refreshes (each replica's
// newest samples, the GPUs joined to their replicas by pod) recorded and
// replayed give the same findings and the same frame at every evaluation.
func TestReplayOfPrometheusRefresh(t *testing.T) {
	srv := promWithDCGM(t, "kv-thrashing")
	path := filepath.Join(t.TempDir(), "refresh.vtop")
	start := time.Now()
	// The backfill, then refreshes for a while (how many does not matter).
	live := recordEvaluations(t, []string{"--prometheus", srv, "--backfill", "10s", "--record", path}, envFor(t), func(*app.Pipeline) bool {
		return time.Since(start) >= 10*time.Second
	})
	joined := 0
	for _, e := range live.last.Endpoints {
		if len(e.GPU.GPUs) == 1 {
			joined++
		}
	}
	if joined != 2 {
		t.Fatalf("%d of 2 replicas joined to their GPUs live: the comparison proves little", joined)
	}
	pl := live.replayed(t, path)
	if got, want := frameJSON(t, pl.Frame()), frameJSON(t, live.last); got != want {
		t.Fatalf("the last frame differs:\n%s", udiff.Unified("live", "replay", want, got))
	}
	t.Logf("%d evaluations equal", len(live.times))
}

// liveRun is what a live pipeline evaluated: each evaluation's time and
// findings, and the last frame.
type liveRun struct {
	times    []time.Time
	findings [][]string
	last     *diagnose.Frame
}

// recordEvaluations runs vtop's pipeline on args (with --record) until its
// sources are done or enough says so, noting every evaluation.
func recordEvaluations(t *testing.T, args []string, env func(string) string, enough func(*app.Pipeline) bool) *liveRun {
	t.Helper()
	o, _, err := resolve(args, env)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPipeline(o, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.StartRecording(o.appConfig(), 0); err != nil {
		t.Fatal(err)
	}
	p.ReadEveryEvaluation()
	lr := &liveRun{}
	note := func() { // after every batch: at most one evaluation since the last call
		if p.Latest() != lr.last {
			lr.last = p.Latest()
			lr.findings = append(lr.findings, findingLines(lr.last))
			lr.times = append(lr.times, lr.last.Time)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Serve(ctx, app.LoopConfig{Stop: func() bool {
		note()
		return enough != nil && enough(p)
	}}); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the run did not end in 2 minutes")
	}
	p.Frame()
	note()
	if err := p.CloseRecording(); err != nil {
		t.Fatal(err)
	}
	return lr
}

// replayed replays path and checks that it evaluates at the live run's
// instants with its findings; the player is left at the end.
func (lr *liveRun) replayed(t *testing.T, path string) *app.Player {
	t.Helper()
	pl, err := app.OpenPlayer([]string{path}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pl.Close)
	k := 0
	for pl.Next() {
		if k >= len(lr.times) {
			t.Fatalf("replay evaluates more often (%d) than the live run (%d)", k+1, len(lr.times))
		}
		if !pl.Frame().Time.Equal(lr.times[k]) {
			t.Fatalf("evaluation %d at %v, live at %v", k, pl.Frame().Time, lr.times[k])
		}
		if got := findingLines(pl.Frame()); strings.Join(got, "\n") != strings.Join(lr.findings[k], "\n") {
			t.Fatalf("evaluation %d (%v): replay\n%s\nlive\n%s", k, lr.times[k], strings.Join(got, "\n"), strings.Join(lr.findings[k], "\n"))
		}
		k++
	}
	if pl.Stopped() != nil || k != len(lr.times) {
		t.Fatalf("replay stopped after %d of %d evaluations: %v", k, len(lr.times), pl.Stopped())
	}
	return pl
}

// recordingText is every byte a recording holds, its compressed frames
// decompressed, so a test can look for what must never be written.
func recordingText(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	out := append([]byte(nil), raw[:8]...)
	for p := raw[8:]; len(p) > 0; {
		if len(p) < 9 {
			t.Fatalf("%s: a cut frame head", path)
		}
		n := int(binary.LittleEndian.Uint32(p))
		typ, payload := p[8], p[9:9+n]
		if typ&0x80 != 0 {
			if payload, err = dec.DecodeAll(payload, nil); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		out = append(out, payload...)
		p = p[9+n:]
	}
	return out
}
