package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startPromOn runs Debian's prometheus on 127.0.0.1:port scraping target
// every second; the caller may stop and continue its process.
func startPromOn(t *testing.T, port, target string) *exec.Cmd {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (.ci/run installs the Debian package)")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	conf := "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: vllm\n    static_configs:\n      - targets: ['" + target + "']\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:"+port, "--log.level=warn")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})
	waitReady(t, "http://127.0.0.1:"+port+"/-/ready")
	return cmd
}

// A Prometheus outage is Prometheus failing, not every replica dying:
// vtop started while the server is down opens and retries; stopped with
// SIGSTOP, the header names the server with its error, the replicas turn
// stale with their last values (never ✗ down) and no endpoint finding
// fires; after SIGCONT they are up again. The stop lasts the 60 s:
// endpoint_down holds for 45 s, so only a stop longer than that shows it
// never fires (35 s, as before, could not fail on it). It costs 25 s more
// of a package that runs ~6 minutes in CI, far inside the 90 minutes.
func TestE2EPrometheusOutage(t *testing.T) {
	bin := vtopBinary(t)
	target := movingServer(t, "llama-prom")
	port := freeTCPPort(t)
	tm := newTerm(t, 160, 40)
	// Nothing listens on port yet: vtop opens anyway and says so.
	tm.start(bin, "--prometheus", "http://127.0.0.1:"+port, "--backfill", "1m", "--gpu", "none",
		"--log", filepath.Join(tm.dir, "vtop.log"))
	s := tm.waitFor(20*time.Second, "Prometheus 127.0.0.1:"+port+" failing", "nothing answers there")
	if strings.Contains(s, "VTOP-EXIT") {
		t.Fatalf("vtop exited with the server down:\n%s", s)
	}
	prom := startPromOn(t, port, target)
	waitSeries(t, "http://127.0.0.1:"+port, 1)
	tm.waitFor(30*time.Second, "● up", "1/1 up")
	tm.waitGone(10*time.Second, " failing")

	if err := prom.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	s = tm.waitFor(30*time.Second, "◌ stale", "Prometheus 127.0.0.1:"+port+" failing")
	t.Logf("stale and the header names Prometheus %s after SIGSTOP", time.Since(stopped).Round(100*time.Millisecond))
	const outage = 60 * time.Second
	for time.Since(stopped) < outage {
		s = tm.screen()
		for _, bad := range []string{"✗ down", "Endpoint down", "endpoint_down"} {
			if strings.Contains(s, bad) {
				t.Fatalf("%s after SIGSTOP the screen shows %q:\n%s", time.Since(stopped).Round(time.Second), bad, s)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !strings.Contains(s, "◌ stale") || !strings.Contains(s, "failing") {
		t.Fatalf("%s into the outage:\n%s", outage, s)
	}
	if err := prom.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	tm.waitFor(40*time.Second, "● up", "1/1 up")
	tm.waitGone(20*time.Second, " failing")
	tm.waitGone(10*time.Second, "◌ stale")
	tm.keys("q")
	tm.assertRestored("0")
}

// --prometheus errors say what is at the address: nothing, or a vLLM
// server's own port (a common mix-up), not a raw client error.
func TestPrometheusErrorsReadable(t *testing.T) {
	vllm := movingServer(t, "llama-not-prom")
	code, _, errOut := runArgs(t, envFor(t), "--once", "--gpu", "none", "--prometheus", "http://"+vllm)
	if code != 3 || !strings.Contains(errOut, "is a vLLM server's own /metrics") || !strings.Contains(errOut, "vtop "+vllm) {
		t.Errorf("a vLLM port given to --prometheus: exit %d, %q", code, errOut)
	}
	dead := deadAddr(t)
	code, _, errOut = runArgs(t, envFor(t), "--once", "--gpu", "none", "--prometheus", "http://"+dead)
	if code != 3 || !strings.Contains(errOut, "nothing answers there (connection refused)") || strings.Contains(errOut, "client_error") {
		t.Errorf("nothing at the address: exit %d, %q", code, errOut)
	}
}
