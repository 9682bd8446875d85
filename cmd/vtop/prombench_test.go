package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vtop-dev/vtop/sim"
)

// The fleet-scale figures of BENCHMARKS.md: vtop --once --prometheus
// against Debian's prometheus holding a large simulated fleet.
//
//	go test -run '^$' -bench 'Prometheus(Refresh2000|Backfill200)' -benchtime 1x ./cmd/vtop
//
// Refresh2000: 2,000 replicas, 16 scrapes 4 minutes apart from 4 minutes
// ago to an hour ahead (promtool is slow on a busy machine, so the blocks
// are kept under $TMPDIR and reused while they cover now; a refresh reads
// the newest sample of each series, through /federate, whatever the
// interval); --backfill 0.
// Backfill200: 200 replicas, one hour at 15 s, read with --at its last
// scrape, so the same blocks serve every run; --backfill 1h.
// The vtop process is measured whole (start, discovery, interval
// detection, the reads, the report): wall, CPU, peak RSS; queries and
// response bytes come from its --log. server-s is Prometheus' own answer
// time for the same requests, replayed one after another by a client that
// discards the bodies, after vtop's run.
func BenchmarkPrometheusRefresh2000(b *testing.B) {
	url, _ := benchServer(b, benchReplicas(2000), 16, 4*time.Minute, time.Hour)
	benchProm(b, url, benchReplicas(2000), "--backfill", "0")
}

// benchReplicas lets VTOP_BENCH_REPLICAS scale a fleet benchmark down (or up).
func benchReplicas(def int) int {
	if n, err := strconv.Atoi(os.Getenv("VTOP_BENCH_REPLICAS")); err == nil && n > 0 {
		return n
	}
	return def
}

func BenchmarkPrometheusBackfill200(b *testing.B) {
	url, end := benchServer(b, benchReplicas(200), 241, 15*time.Second, 0)
	benchProm(b, url, benchReplicas(200), "--backfill", "1h", "--at", end.UTC().Format(time.RFC3339))
}

// benchServer starts Prometheus on blocks of replicas × scrapes, the last
// one ahead of now. The blocks are made once and kept under
// $TMPDIR/vtop-bench-blocks while their newest scrape is still ahead (or,
// with ahead 0, for good: such a history is read with --at); it returns
// the URL and the newest scrape's time.
func benchServer(b *testing.B, replicas, scrapes int, step, ahead time.Duration) (string, time.Time) {
	if _, err := exec.LookPath("promtool"); err != nil {
		b.Skip("promtool not installed")
	}
	if url := os.Getenv("VTOP_BENCH_PROMETHEUS"); url != "" { // a server already holding the fleet
		return url, time.Now()
	}
	root := filepath.Join(os.TempDir(), "vtop-bench-blocks")
	// "whole": blocks whose counts are whole numbers (writeFleetOM); the
	// blocks cached before them are not taken.
	name := fmt.Sprintf("whole-%d-%d-%s-%s", replicas, scrapes, step, ahead)
	if ents, _ := os.ReadDir(root); ents != nil {
		for _, e := range ents {
			n, endStr, ok := strings.Cut(e.Name(), "@") // "….part": unfinished, not a number
			sec, err := strconv.ParseInt(endStr, 10, 64)
			if !ok || n != name || err != nil {
				continue
			}
			end := time.Unix(sec, 0)
			if ahead == 0 || time.Until(end) > 2*time.Minute {
				b.Logf("blocks: %s (cached)", e.Name())
				return startPrometheusAt(b, filepath.Join(root, e.Name()), step), end
			}
			os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
	end := time.Now().Add(ahead).Truncate(step)
	om := filepath.Join(b.TempDir(), "fleet.om")
	writeFleetOM(b, om, replicas, scrapes, step, end)
	data := filepath.Join(root, fmt.Sprintf("%s@%d", name, end.Unix()))
	t0 := time.Now()
	// Written aside and renamed: a run stopped half-way leaves no blocks
	// that a later run would take for whole.
	if out, err := exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", om, data+".part").CombinedOutput(); err != nil {
		os.RemoveAll(data + ".part")
		b.Fatalf("promtool: %v\n%s", err, out)
	}
	if err := os.Rename(data+".part", data); err != nil {
		b.Fatal(err)
	}
	os.Remove(om)
	b.Logf("promtool: %s for %d samples", time.Since(t0).Round(time.Second), replicas*scrapes*325)
	return startPrometheusAt(b, data, step), end
}

func benchProm(b *testing.B, url string, replicas int, args ...string) {
	bin := vtopBinary(b)
	dir := b.TempDir()
	logf := filepath.Join(dir, "vtop.log")
	// Each run's figures are logged, and their means reported (a metric
	// reported in every iteration keeps only the last).
	names := []string{"wall-s", "read-s", "cpu-s", "rss-MiB", "queries", "resp-MiB", "server-s"}
	sum := make([]float64, len(names))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		os.Remove(logf)
		cmd := exec.Command(bin, append([]string{"--once", "-o", "json", "--prometheus", url, "--log", logf}, args...)...)
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		wall := time.Since(start)
		if cmd.ProcessState == nil || (err != nil && cmd.ProcessState.ExitCode() > 2) {
			log, _ := os.ReadFile(logf)
			b.Fatalf("vtop: %v\n%.1500s\n%.3000s", err, out.String(), log)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		log, _ := os.ReadFile(logf)
		m := regexp.MustCompile(`queries=(\d+) bytes=(\d+) endpoints=(\d+) read_seconds=([0-9.e-]+)`).FindSubmatch(log)
		if m == nil {
			b.Fatalf("no request counts in the log:\n%s", log)
		}
		q, _ := strconv.Atoi(string(m[1]))
		by, _ := strconv.Atoi(string(m[2]))
		eps, _ := strconv.Atoi(string(m[3]))
		read, _ := strconv.ParseFloat(string(m[4]), 64)
		if eps != replicas {
			b.Fatalf("%d endpoints, want %d", eps, replicas)
		}
		b.StopTimer()
		server := replayRequests(b, log)
		b.StartTimer()
		run := []float64{wall.Seconds(), read, cpu.Seconds(), float64(ru.Maxrss) / 1024, float64(q), float64(by) / (1 << 20), server.Seconds()}
		line := fmt.Sprintf("run %d/%d:", i+1, b.N)
		for j, v := range run {
			sum[j] += v
			line += fmt.Sprintf(" %.3g %s", v, names[j])
		}
		b.Log(line)
	}
	for j, name := range names {
		b.ReportMetric(sum[j]/float64(b.N), name)
	}
}

// replayRequests sends the server the requests vtop's log lists, one after
// another, reading and discarding each answer: the server's own time.
func replayRequests(b *testing.B, log []byte) time.Duration {
	re := regexp.MustCompile(`msg="prometheus request" method=(\S+) url=("(?:[^"\\]|\\.)*"|\S+) form=("(?:[^"\\]|\\.)*"|\S*) `)
	var total time.Duration
	for _, m := range re.FindAllSubmatch(log, -1) {
		unq := func(s []byte) string {
			if u, err := strconv.Unquote(string(s)); err == nil {
				return u
			}
			return string(s)
		}
		method, u, form := string(m[1]), unq(m[2]), unq(m[3])
		if method == http.MethodGet {
			// The log hides a URL's query values and lists the query as
			// the form (no credential rides in the benchmark's URL).
			u, _, _ = strings.Cut(u, "?")
			u, form = u+"?"+form, ""
		}
		req, err := http.NewRequest(method, u, strings.NewReader(form))
		if err != nil {
			b.Fatal(err)
		}
		if method == http.MethodPost {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if strings.Contains(u, "/federate") {
			req.Header.Set("Accept", "text/plain;version=0.0.4")
		}
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		total += time.Since(start)
	}
	return total
}

// writeFleetOM writes replicas × scrapes of four simulated replicas'
// expositions (replica i is a copy of sim replica i%4 under its own
// instance label), counters growing between scrapes (counts whole).
func writeFleetOM(b *testing.B, path string, replicas, scrapes int, step time.Duration, end time.Time) {
	f, err := sim.NewFleet(sim.FleetConfig{Replicas: []sim.ReplicaConfig{{}, {}, {}, {}}}, 1)
	if err != nil {
		b.Fatal(err)
	}
	f.Advance(5 * time.Minute)
	type line struct {
		name, labels string
		v            float64
	}
	var tmpl [4][]line
	for i, r := range f.Replicas() {
		sc := bufio.NewScanner(bytes.NewReader(r.Exposition(sim.FormatText)))
		for sc.Scan() {
			l := sc.Text()
			if l == "" || l[0] == '#' || strings.Contains(l, "_created") {
				continue
			}
			sp := strings.LastIndexByte(l, ' ')
			v, _ := strconv.ParseFloat(l[sp+1:], 64)
			series := l[:sp]
			name, labels := series, ""
			if j := strings.IndexByte(series, '{'); j >= 0 {
				name, labels = series[:j], strings.TrimSuffix(series[j+1:], "}")
				if labels != "" {
					labels = "," + labels
				}
			}
			tmpl[i] = append(tmpl[i], line{name, labels, v})
		}
	}
	out, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(out, 1<<20)
	for k := 0; k < scrapes; k++ {
		at := end.Add(-time.Duration(scrapes-1-k) * step)
		ts := strconv.FormatInt(at.Unix(), 10)
		grow := 1 + 0.001*float64(k)
		for r := 0; r < replicas; r++ {
			inst := fmt.Sprintf(`{instance="replica-%04d:8000",job="vllm"`, r)
			for _, l := range tmpl[r%4] {
				v := l.v
				switch {
				case strings.HasSuffix(l.name, "_seconds_total") || strings.HasSuffix(l.name, "_sum"):
					v *= grow
				case strings.HasSuffix(l.name, "_total") || strings.HasSuffix(l.name, "_bucket") ||
					strings.HasSuffix(l.name, "_count"):
					// Counts stay whole, as an engine's are. Fractional
					// ones (v × 1.001k from the second scrape on) turned
					// every histogram ring to float64 and made each value
					// 17 digits: a load no server gives, taken only once
					// the blocks were a scrape old, so the figure moved
					// with the blocks' age.
					v = math.Round(v * grow)
				}
				w.WriteString(l.name)
				w.WriteString(inst)
				w.WriteString(l.labels)
				w.WriteString("} ")
				w.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
				w.WriteByte(' ')
				w.WriteString(ts)
				w.WriteByte('\n')
			}
		}
	}
	w.WriteString("# EOF\n")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	out.Close()
}

// startPrometheusAt serves an existing data directory whose samples are
// step apart (its configured scrape interval, which vtop falls back on
// when the last five minutes hold too few samples to tell).
func startPrometheusAt(b *testing.B, data string, step time.Duration) string {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		b.Skip("prometheus not installed")
	}
	cfg := filepath.Join(b.TempDir(), "prometheus.yml")
	os.WriteFile(cfg, []byte("global:\n  scrape_interval: "+model.Duration(step).String()+"\n"), 0o644)
	port := freeTCPPort(b)
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+data,
		"--web.listen-address=127.0.0.1:"+port, "--log.level=warn", "--query.max-samples=100000000")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	url := "http://127.0.0.1:" + port
	waitReady(b, url+"/-/ready")
	return url
}
