package main

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

// Helpers for tests against real time-series servers: a simulated fleet's
// history written into them, and the servers started on loopback.

// history is a simulated fleet run with a simulated clock, as the batches
// a direct scraper would have produced and as timestamped samples for a
// TSDB (each replica's series carry job="vllm" and instance=its name).
type history struct {
	batches []sources.Batch
	om      bytes.Buffer // OpenMetrics, seconds (promtool)
	prom    bytes.Buffer // text with millisecond timestamps (VictoriaMetrics' import)
	end     time.Time
}

// simHistory runs cfg from epoch for span, scraping every step.
func simHistory(t testing.TB, cfg sim.FleetConfig, epoch time.Time, span, step time.Duration) *history {
	t.Helper()
	return simHistoryLeaving(t, cfg, epoch, span, step, nil)
}

// simHistoryLeaving is simHistory with replicas that leave the fleet at
// the times given (since epoch): from then on they are not scraped, and
// their up series ends as Prometheus' does when a target leaves its
// configuration. The direct batches say so as discovery would.
func simHistoryLeaving(t testing.TB, cfg sim.FleetConfig, epoch time.Time, span, step time.Duration, leave map[string]time.Duration) *history {
	t.Helper()
	return simHistorySeeded(t, cfg, epoch, span, step, leave, 1)
}

// simHistorySeeded is simHistoryLeaving with the simulator's seed given
// (the others take 1): another draw of the same fleet's traffic.
func simHistorySeeded(t testing.TB, cfg sim.FleetConfig, epoch time.Time, span, step time.Duration, leave map[string]time.Duration, seed uint64) *history {
	t.Helper()
	cfg.Epoch = epoch
	f, err := sim.NewFleet(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	h := &history{}
	norms := make([]*sources.Normalizer, len(f.Replicas()))
	for i := range norms {
		norms[i] = sources.NewNormalizer()
	}
	gone := map[string]bool{}
	for f.Elapsed() < span {
		f.Advance(step)
		b := sources.Batch{Now: f.Now()}
		for i, r := range f.Replicas() {
			if at, ok := leave[r.Name()]; ok && f.Elapsed() >= at {
				if !gone[r.Name()] {
					gone[r.Name()] = true
					b.Departed = append(b.Departed, r.Name())
				}
				continue
			}
			s := sources.Scrape{Target: r.Name(), Time: f.Now()}
			if !r.Reachable() {
				// Refused (a restart loading its model): no samples, as a
				// server would have none for this scrape, but up 0.
				s.Err = errors.New("connection refused (is vLLM running on this port?)")
				b.Scrapes = append(b.Scrapes, s)
				h.addSamples([]byte("up 0\n"), r.Name(), f.Now())
				continue
			}
			body := r.Exposition(sim.FormatText)
			if s.Data, s.Err = norms[i].Normalize(body, sim.FormatText.ContentType()); s.Err != nil {
				t.Fatal(s.Err)
			}
			b.Scrapes = append(b.Scrapes, s)
			h.addSamples(body, r.Name(), f.Now())
			h.addSamples([]byte("up 1\n"), r.Name(), f.Now())
		}
		h.batches = append(h.batches, b)
	}
	h.om.WriteString("# EOF\n")
	h.end = f.Now()
	return h
}

// addSamples appends every sample line of an exposition with the target's
// labels and the scrape's time.
func (h *history) addSamples(body []byte, instance string, at time.Time) {
	target := `instance="` + instance + `",job="vllm"`
	sec := strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)
	ms := strconv.FormatInt(at.UnixMilli(), 10)
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		if i := strings.IndexByte(l, '{'); i >= 0 && l[i+1] == '}' {
			l = l[:i+1] + target + l[i+1:]
		} else if i >= 0 {
			l = l[:i+1] + target + "," + l[i+1:]
		} else {
			sp := strings.IndexByte(l, ' ')
			l = l[:sp] + "{" + target + "}" + l[sp:]
		}
		h.om.WriteString(l + " " + sec + "\n")
		h.prom.WriteString(l + " " + ms + "\n")
	}
}

// startPrometheus runs Debian's prometheus on loopback over the blocks of
// h (when given) and the scrape config cfg; it returns the API's URL.
func startPrometheus(t *testing.T, h *history, scrape string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed (.ci/run installs the Debian package)")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if h != nil {
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			t.Skip("promtool not installed (.ci/run installs the Debian prometheus package)")
		}
		om := filepath.Join(dir, "history.om")
		if err := os.WriteFile(om, h.om.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, data).CombinedOutput(); err != nil {
			t.Fatalf("promtool: %v\n%s", err, b)
		}
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"+scrape), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freeTCPPort(t)
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+data,
		"--web.listen-address=127.0.0.1:"+port, "--log.level=warn")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})
	url := "http://127.0.0.1:" + port
	waitReady(t, url+"/-/ready")
	return url
}

// startVictoria runs victoria-metrics on loopback and imports h's samples
// with their timestamps; it returns the URL of its Prometheus API.
func startVictoria(t *testing.T, h *history, scrape string) string {
	t.Helper()
	bin, err := exec.LookPath("victoria-metrics")
	if err != nil {
		t.Skip("victoria-metrics not installed (.ci/run installs the Debian package)")
	}
	dir := t.TempDir()
	port := freeTCPPort(t)
	args := []string{"-storageDataPath=" + filepath.Join(dir, "data"), "-httpListenAddr=127.0.0.1:" + port,
		"-search.latencyOffset=0s", "-search.disableCache", "-loggerLevel=WARN"}
	if scrape != "" {
		cfg := filepath.Join(dir, "scrape.yml")
		if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1s\n"+scrape), 0o644); err != nil {
			t.Fatal(err)
		}
		// It re-reads file_sd files once a minute by default.
		args = append(args, "-promscrape.config="+cfg, "-promscrape.fileSDCheckInterval=1s")
	}
	cmd := exec.Command(bin, args...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("victoria-metrics log:\n%s", logs.String())
		}
	})
	url := "http://127.0.0.1:" + port
	waitReady(t, url+"/health")
	if h != nil {
		resp, err := http.Post(url+"/api/v1/import/prometheus", "text/plain", bytes.NewReader(h.prom.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("import: HTTP %d", resp.StatusCode)
		}
		// Imported rows become searchable after a flush.
		if resp, err := http.Get(url + "/internal/force_flush"); err == nil {
			resp.Body.Close()
		}
	}
	return url
}

func waitReady(t testing.TB, url string) {
	t.Helper()
	for i := 0; ; i++ {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if i == 600 {
			t.Fatalf("%s not ready after 60 s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freeTCPPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := strings.Cut(l.Addr().String(), ":")
	return port
}
