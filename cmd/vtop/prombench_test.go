package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources/sim"
)

// The fleet-scale figures of BENCHMARKS.md: vtop --once --prometheus
// against Debian's prometheus holding a large simulated fleet.
//
//	go test -run '^$' -bench 'Prometheus(Refresh2000|Backfill200)' -benchtime 1x ./cmd/vtop
//
// Refresh2000: 2,000 replicas, 12 scrapes a minute apart from 3 minutes ago
// to 8 ahead (promtool is slow on a busy machine; one refresh reads the
// newest sample of each series whatever the interval); --backfill 0.
// Backfill200: 200 replicas, one hour (and 2 minutes ahead) at 15 s;
// --backfill 1h.
// The vtop process is measured whole (start, discovery, interval
// detection, the reads, the report): wall, CPU, peak RSS; queries and
// response bytes come from its --log.
func BenchmarkPrometheusRefresh2000(b *testing.B) {
	benchProm(b, benchReplicas(2000), 12, time.Minute, 8*time.Minute, "--backfill", "0")
}

// benchReplicas lets VTOP_BENCH_REPLICAS scale a fleet benchmark down (or up).
func benchReplicas(def int) int {
	if n, err := strconv.Atoi(os.Getenv("VTOP_BENCH_REPLICAS")); err == nil && n > 0 {
		return n
	}
	return def
}

func BenchmarkPrometheusBackfill200(b *testing.B) {
	benchProm(b, benchReplicas(200), 249, 15*time.Second, 2*time.Minute, "--backfill", "1h")
}

func benchProm(b *testing.B, replicas, scrapes int, step, ahead time.Duration, args ...string) {
	if _, err := exec.LookPath("promtool"); err != nil {
		b.Skip("promtool not installed")
	}
	bin := vtopBinary(b)
	dir := b.TempDir()
	url := os.Getenv("VTOP_BENCH_PROMETHEUS") // a server already holding the fleet
	if url == "" {
		om := filepath.Join(dir, "fleet.om")
		writeFleetOM(b, om, replicas, scrapes, step, ahead)
		data := filepath.Join(dir, "data")
		t0 := time.Now()
		if out, err := exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", om, data).CombinedOutput(); err != nil {
			b.Fatalf("promtool: %v\n%s", err, out)
		}
		os.Remove(om)
		b.Logf("promtool: %s", time.Since(t0).Round(time.Second))
		url = startPrometheusAt(b, data)
	}
	logf := filepath.Join(dir, "vtop.log")
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
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(read, "read-s")
		b.ReportMetric(cpu.Seconds(), "cpu-s")
		b.ReportMetric(float64(ru.Maxrss)/1024, "rss-MiB")
		b.ReportMetric(float64(q), "queries")
		b.ReportMetric(float64(by)/(1<<20), "resp-MiB")
	}
}

// writeFleetOM writes replicas × scrapes of four simulated replicas'
// expositions (replica i is a copy of sim replica i%4 under its own
// instance label), counters growing between scrapes.
func writeFleetOM(b *testing.B, path string, replicas, scrapes int, step, ahead time.Duration) {
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
	// promtool takes a while: the timeline runs ahead into the future, so
	// the newest scrape is still fresh when vtop reads.
	end := time.Now().Add(ahead).Truncate(step)
	for k := 0; k < scrapes; k++ {
		at := end.Add(-time.Duration(scrapes-1-k) * step)
		ts := strconv.FormatInt(at.Unix(), 10)
		grow := 1 + 0.001*float64(k)
		for r := 0; r < replicas; r++ {
			inst := fmt.Sprintf(`{instance="replica-%04d:8000",job="vllm"`, r)
			for _, l := range tmpl[r%4] {
				v := l.v
				if strings.HasSuffix(l.name, "_total") || strings.HasSuffix(l.name, "_bucket") ||
					strings.HasSuffix(l.name, "_sum") || strings.HasSuffix(l.name, "_count") {
					v *= grow
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

// startPrometheusAt serves an existing data directory.
func startPrometheusAt(b *testing.B, data string) string {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		b.Skip("prometheus not installed")
	}
	cfg := filepath.Join(b.TempDir(), "prometheus.yml")
	os.WriteFile(cfg, []byte("global:\n  scrape_interval: 15s\n"), 0o644)
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
