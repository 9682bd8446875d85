package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkPrometheusTUI2000 measures what BenchmarkPrometheusRefresh2000
// does not: the CPU a refresh costs the screen users run, `vtop
// --prometheus URL` in tmux at 200×60, once its heap is grown, against
// the same 2,000 replicas. With --prometheus vtop refreshes at the
// server's scrape interval (detected from the data; --interval does not
// apply), so the blocks here are scraped every 10 s: each refresh finds a
// new scrape of every replica, as on a live server. They cover only a
// 5-minute window that begins ~3 minutes after they are written (promtool
// needs 2 minutes or more for them on this machine, and fewer scrapes are
// fewer samples to write); the run waits for the window.
//
//	go test -run '^$' -bench PrometheusTUI2000 -benchtime 1x -timeout 30m ./cmd/vtop
//
// After the first two refreshes (the heap's growth, the first frames) it
// reads the process's utime+stime from /proc at the start of each of the
// next VTOP_BENCH_REFRESHES (10) refreshes, a refresh's start being the
// first answer logged (--log) after 3 s without one. Each delta is one
// whole interval of the process: the refresh, the evaluation and the
// frames drawn until the next. Then, on the same server in the same
// minutes, VTOP_BENCH_ONCE (6) runs of `--once -o json --backfill 0` for
// comparison, measured as BenchmarkPrometheusRefresh2000 measures them.
func BenchmarkPrometheusTUI2000(b *testing.B) {
	const step, scrapes, ahead = 10 * time.Second, 30, 8 * time.Minute
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Skip("tmux not installed")
	}
	replicas := benchReplicas(2000)
	url, end := benchServer(b, replicas, scrapes, step, ahead)
	refreshes := envInt("VTOP_BENCH_REFRESHES", 10)
	onces := envInt("VTOP_BENCH_ONCE", 6)
	if os.Getenv("VTOP_BENCH_PROMETHEUS") == "" {
		// Three scrapes in the window before vtop opens: the interval is
		// detected from the samples' gaps.
		first := end.Add(-time.Duration(scrapes-1) * step)
		if wait := time.Until(first.Add(3 * step)); wait > 0 {
			b.Logf("waiting %s for the blocks' window", wait.Round(time.Second))
			time.Sleep(wait)
		}
		need := time.Duration(refreshes+4)*step + time.Duration(onces)*8*time.Second
		if left := time.Until(end); left < need {
			b.Fatalf("the blocks end in %s, the run needs %s: remove them from %s and run again",
				left.Round(time.Second), need, filepath.Join(os.TempDir(), "vtop-bench-blocks"))
		}
	}
	bin := vtopBinary(b)
	dir := b.TempDir()
	logf := filepath.Join(dir, "vtop.log")
	sock := fmt.Sprintf("vtop-bench-%d", os.Getpid())
	cmd := exec.Command("tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "60",
		"env", "-i", "PATH="+os.Getenv("PATH"), "HOME="+dir, "TERM=xterm-256color", "LANG=C.UTF-8", "XDG_CONFIG_HOME="+dir,
		bin, "--prometheus", url, "--backfill", "0", "--log", logf)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	b.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
	out, err := exec.Command("tmux", "-L", sock, "display-message", "-p", "#{pane_pid}").Output()
	pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid <= 0 {
		b.Fatalf("no pane pid: %v %q", err, out)
	}
	b.Logf("load at start: %s", loadavg())

	// Refresh starts, from the log: an answer after 3 s of none.
	var starts []time.Time
	var cpus []float64
	var answers []int // answers logged in each refresh
	seen, last := 0, time.Time{}
	deadline := time.Now().Add(time.Duration(refreshes+6) * 3 * step)
	for len(starts) < refreshes+3 {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf)
			b.Fatalf("%d refreshes seen in %s:\n%.3000s", len(starts), time.Duration(refreshes+6)*3*step, log)
		}
		if exited(pid) {
			log, _ := os.ReadFile(logf)
			b.Fatalf("vtop exited:\n%.3000s", log)
		}
		log, _ := os.ReadFile(logf)
		n := bytes.Count(log, []byte(`msg="prometheus request"`))
		now := time.Now()
		if n > seen {
			if len(starts) == 0 || now.Sub(last) > 3*time.Second {
				starts = append(starts, now)
				cpus = append(cpus, procCPU(b, pid))
				answers = append(answers, 0)
			}
			answers[len(answers)-1] += n - seen
			seen, last = n, now
		}
		time.Sleep(20 * time.Millisecond)
	}
	rss := procRSS(pid)
	screen, _ := exec.Command("tmux", "-L", sock, "capture-pane", "-p").Output()
	lines := strings.SplitN(string(screen), "\n", 4)
	b.Logf("screen (first lines of 200×60):\n%s", strings.Join(lines[:min(3, len(lines))], "\n"))
	b.Logf("load after the TUI: %s", loadavg())
	exec.Command("tmux", "-L", sock, "kill-server").Run()

	// Refreshes 1 and 2 are the warm-up; the deltas from the third on.
	var per []float64
	for i := 2; i+1 < len(starts); i++ {
		d := cpus[i+1] - cpus[i]
		per = append(per, d)
		b.Logf("refresh %d: %.2f s CPU over %s, %d answers", i+1, d, starts[i+1].Sub(starts[i]).Round(10*time.Millisecond), answers[i])
	}
	total := (cpus[len(cpus)-1] - cpus[2]) / float64(len(per))
	sorted := slices.Clone(per)
	slices.Sort(sorted)
	b.Logf("TUI: %d refreshes, %.3f s CPU a refresh (mean), median %.2f, range %.2f-%.2f; first two: %.2f s (start included); RSS %d MiB",
		len(per), total, sorted[len(sorted)/2], sorted[0], sorted[len(sorted)-1], cpus[2], rss>>20)
	b.ReportMetric(total, "tui-cpu-s/refresh")
	b.ReportMetric(sorted[len(sorted)/2], "tui-cpu-s-median")
	b.ReportMetric(float64(rss>>20), "tui-rss-MiB")

	// The one-refresh process in the same minutes.
	var once []float64
	for i := 0; i < onces; i++ {
		c := exec.Command(bin, "--once", "-o", "json", "--prometheus", url, "--backfill", "0")
		c.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir)
		var buf bytes.Buffer
		c.Stdout, c.Stderr = &buf, &buf
		err := c.Run()
		if c.ProcessState == nil || (err != nil && c.ProcessState.ExitCode() > 2) {
			b.Fatalf("vtop --once: %v\n%.1500s", err, buf.String())
		}
		cpu := c.ProcessState.UserTime() + c.ProcessState.SystemTime()
		once = append(once, cpu.Seconds())
	}
	if len(once) > 0 {
		b.Logf("--once: %.2f s CPU each", once)
		slices.Sort(once)
		b.Logf("--once: median %.2f, range %.2f-%.2f; load after: %s", once[len(once)/2], once[0], once[len(once)-1], loadavg())
		b.ReportMetric(once[len(once)/2], "once-cpu-s-median")
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// procCPU is a process's utime+stime in seconds (/proc/PID/stat, in
// clock ticks of 1/100 s, Linux's USER_HZ).
func procCPU(b *testing.B, pid int) float64 {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(s[bytes.LastIndexByte(s, ')')+1:]))
	// After the command: state is field 3 of the line, utime 14, stime 15.
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100
}

// procRSS is a process's resident set in bytes, 0 if unreadable.
func procRSS(pid int) int64 {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(s), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func loadavg() string {
	s, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(s))[:3], " ")
}
