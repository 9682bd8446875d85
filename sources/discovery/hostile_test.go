package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/internal/hungfs"
	"github.com/vtop-dev/vtop/sources"
)

// problems follows a source's Problems until want says it saw enough; a
// source failing (Problem.Fails) reads "fails: " and its text.
func problems(t *testing.T, w *watcher, what string, want func(map[string]string) bool) map[string]string {
	t.Helper()
	now := map[string]string{}
	deadline := time.After(20 * time.Second)
	for !want(now) {
		select {
		case b := <-w.out:
			for _, p := range b.Problems {
				if p.Text == "" {
					delete(now, p.Key)
				} else if p.Fails {
					now[p.Key] = "fails: " + p.Text
				} else {
					now[p.Key] = p.Text
				}
			}
			for _, tg := range b.Arrived {
				w.live[tg.Name] = true
			}
			for _, name := range b.Departed {
				delete(w.live, name)
			}
		case <-deadline:
			t.Fatalf("%s: problems %q", what, now)
		}
	}
	return now
}

// TestFileSDFailuresSaid: a missing, malformed, oversized or non-regular
// --file-sd file is a Problem naming the file and why, not silence; once
// the file is right the Problem is cleared and its targets polled.
func TestFileSDFailuresSaid(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sd.json")
	key := Spec{Kind: "file", Path: path}.String()
	f, _ := sources.NewFetcher(sources.HTTPConfig{Timeout: time.Second})
	w := watch(t, &Source{Specs: []Spec{{Kind: "file", Path: path}}, Fetcher: f, Poll: pollConfig()})
	says := func(what, text string) {
		t.Helper()
		// The rule fails: the header names it failing (Problem.Fails).
		problems(t, w, what, func(m map[string]string) bool {
			return strings.HasPrefix(m[key], "fails: ") && strings.Contains(m[key], text)
		})
	}
	says("missing", "no such file")
	write := func(b []byte) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write([]byte(`[{"targets": ["127.0.0.1:1"`))
	says("malformed", "yaml")
	write(make([]byte, MaxFileSD+1))
	says("oversized", "larger than 8 MiB")
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	says("a FIFO", "not a regular file")
	os.Remove(path)
	write([]byte(`[{"targets": ["127.0.0.1:1"]}]`))
	problems(t, w, "fixed", func(m map[string]string) bool { return len(m) == 0 && w.live["127.0.0.1:1"] })
}

// TestFileSDFIFOQuits: a --file-sd path that blocks a reader (a FIFO
// with no writer) does not keep the source from ending when asked.
func TestFileSDFIFOQuits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := sources.NewFetcher(sources.HTTPConfig{Timeout: time.Second})
	s := &Source{Specs: []Spec{{Kind: "file", Path: path}}, Fetcher: f, Poll: pollConfig()}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan sources.Batch, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, out)
	}()
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("the source did not end 3 s after it was asked to")
	}
}

// TestDiscoveredShareSlots: discovered targets draw from one slot pool
// with the static ones: --max-parallel bounds them all, where each used
// to get a pool of its own and all polled at the same instant.
func TestDiscoveredShareSlots(t *testing.T) {
	var inFlight, peak atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(2 * time.Millisecond)
		inFlight.Add(-1)
		fmt.Fprint(w, "vllm:num_requests_running 1\n")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()
	// 40 targets on one server, told apart by their paths.
	var groups []string
	for i := 0; i < 40; i++ {
		groups = append(groups, `{"targets": ["`+addr+`"], "labels": {"__metrics_path__": "/m`+strconv.Itoa(i)+`"}}`)
	}
	path := filepath.Join(t.TempDir(), "sd.json")
	if err := os.WriteFile(path, []byte("["+strings.Join(groups, ",")+"]"), 0o644); err != nil {
		t.Fatal(err)
	}
	static, _ := sources.ParseTarget("http://" + addr + "/static")
	f, _ := sources.NewFetcher(sources.HTTPConfig{Timeout: time.Second})
	pc := pollConfig()
	pc.Interval, pc.MaxParallel = 2*time.Second, 4 // a fair share of ~200 ms: a scrape ends within it, load allowing
	w := watch(t, &Source{Specs: []Spec{{Kind: "file", Path: path}}, Static: []sources.Target{static}, Fetcher: f, Poll: pc})
	var seen sync.Map
	deadline := time.After(20 * time.Second)
	for n := 0; n < 41*2; {
		select {
		case b := <-w.out:
			for _, s := range b.Scrapes {
				if s.Err != nil {
					t.Fatalf("%s: %v", s.Target, s.Err)
				}
				seen.Store(s.Target, true)
				n++
			}
		case <-deadline:
			t.Fatal("too few scrapes")
		}
	}
	// A scrape that outlives its fair share gives its slot back (so hung
	// targets cannot starve the rest): on a loaded machine, under -race, a
	// few do. Twice the bound leaves room for that; one pool per target,
	// as before, peaked at 41.
	if p := peak.Load(); p > 2*4 {
		t.Errorf("peak %d scrapes at once with --max-parallel 4", p)
	}
}

// TestDiscoveryMaxTargets: past MaxTargets the rest of what the rules
// found is left out, the static targets first kept, and a Problem says so.
func TestDiscoveryMaxTargets(t *testing.T) {
	var ts []string
	for i := 0; i < 30; i++ {
		ts = append(ts, `"127.0.0.1:`+strconv.Itoa(40000+i)+`"`)
	}
	path := filepath.Join(t.TempDir(), "sd.json")
	if err := os.WriteFile(path, []byte(`[{"targets": [`+strings.Join(ts, ",")+`]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	static, _ := sources.ParseTarget("127.0.0.1:1")
	f, _ := sources.NewFetcher(sources.HTTPConfig{Timeout: time.Second})
	w := watch(t, &Source{Specs: []Spec{{Kind: "file", Path: path}}, Static: []sources.Target{static}, Fetcher: f, Poll: pollConfig(), MaxTargets: 10})
	got := problems(t, w, "bound", func(m map[string]string) bool { return m["discovery"] != "" && len(w.live) >= 10 })
	if !strings.HasPrefix(got["discovery"], "31 targets found, more than the limit of 10") { // a bound, not a failure
		t.Errorf("problem %q", got["discovery"])
	}
	time.Sleep(300 * time.Millisecond)
	for {
		select {
		case b := <-w.out:
			for _, tg := range b.Arrived {
				w.live[tg.Name] = true
			}
			continue
		default:
		}
		break
	}
	if len(w.live) != 10 || !w.live["127.0.0.1:1"] {
		t.Errorf("%d live, static kept %v", len(w.live), w.live["127.0.0.1:1"])
	}
}

// TestDiscoveredOnePoller: discovered targets join the run's one poller,
// not a poller each: the goroutines do not grow with the targets (two a
// target before, a heartbeat and a poller), their scrapes go on gathered
// into batches (one batch a scrape before), and "r" (PollNow) reaches them
// (discovery did not implement it).
func TestDiscoveredOnePoller(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		fmt.Fprint(w, "vllm:num_requests_running 1\n")
	})}
	// Closed after each answer: a kept connection is a server goroutine
	// a target, which would count here.
	srv.SetKeepAlivesEnabled(false)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()
	const n = 200
	var groups []string
	for i := 0; i < n; i++ {
		groups = append(groups, `{"targets": ["`+addr+`"], "labels": {"__metrics_path__": "/m`+strconv.Itoa(i)+`"}}`)
	}
	path := filepath.Join(t.TempDir(), "sd.json")
	if err := os.WriteFile(path, []byte("["+strings.Join(groups, ",")+"]"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := sources.NewFetcher(sources.HTTPConfig{Timeout: 5 * time.Second})
	pc := pollConfig()
	pc.Interval, pc.MaxBackoff = time.Hour, time.Hour // one poll each, then only PollNow polls
	before := runtime.NumGoroutine()
	s := &Source{Specs: []Spec{{Kind: "file", Path: path}}, Fetcher: f, Poll: pc}
	w := watch(t, s)
	scraped := map[string]int{}
	batches := 0
	take := func(what string, rounds int) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for len(scraped) < n || minOf(scraped) < rounds {
			select {
			case b := <-w.out:
				for _, sc := range b.Scrapes {
					if sc.Err != nil {
						t.Fatalf("%s: %v", sc.Target, sc.Err)
					}
					scraped[sc.Target]++
				}
				if len(b.Scrapes) > 0 {
					batches++
				}
			case <-deadline:
				t.Fatalf("%s: %d targets scraped, the fewest %d times", what, len(scraped), minOf(scraped))
			}
		}
	}
	take("first polls", 1)
	t.Logf("%d goroutines more, %d batches for %d targets", runtime.NumGoroutine()-before, batches, n)
	if g := runtime.NumGoroutine() - before; g > n/4 {
		t.Errorf("%d goroutines more with %d targets polled (one poller: a few)", g, n)
	}
	if batches > n/2 {
		t.Errorf("%d scrapes came in %d batches (gathered: a few)", n, batches)
	}
	pn, ok := any(s).(sources.PollNower)
	if !ok {
		t.Fatal("discovery does not poll now when asked (no PollNow)")
	}
	pn.PollNow()
	take("polled now", 2)
	if r := requests.Load(); r < 2*n {
		t.Errorf("%d requests", r)
	}
}

func minOf(m map[string]int) int {
	n := -1
	for _, c := range m {
		if n < 0 || c < n {
			n = c
		}
	}
	return n
}

// TestFileSDHungMount: a --file-sd path on a real hung mount (FUSE whose
// server stopped answering: stat and read wait in the kernel, as on an NFS
// hard mount whose server is gone). The rule is said to be stuck, naming
// the file, within seconds; the static target goes on being polled; no
// second read piles up on the hung one; and the source ends when asked.
// Before, the discovery loop waited on the read until the end: nothing
// was said and no target list changed again.
func TestFileSDHungMount(t *testing.T) {
	m, err := hungfs.New(t.TempDir())
	if errors.Is(err, hungfs.ErrUnavailable) {
		t.Skip(err) // the FIFO test covers the same path without privileges
	}
	if err != nil {
		t.Fatal(err)
	}
	// Closed last (cleanups run in reverse): the blocked stat then fails
	// and its goroutine ends.
	t.Cleanup(func() { m.Close() })
	path := filepath.Join(m.Dir, "sd.json")
	port := freePort(t)
	vllmAt(t, "127.0.0.1:"+strconv.Itoa(port))
	static, _ := sources.ParseTarget("127.0.0.1:" + strconv.Itoa(port))
	f, _ := sources.NewFetcher(sources.HTTPConfig{Timeout: time.Second})
	s := &Source{Specs: []Spec{{Kind: "file", Path: path}}, Static: []sources.Target{static}, Fetcher: f, Poll: pollConfig()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan sources.Batch, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, out)
	}()
	key := Spec{Kind: "file", Path: path}.String()
	var stuck string
	scrapes, after := 0, 0
	deadline := time.After(20 * time.Second)
	for stuck == "" || after < 10 {
		select {
		case b := <-out:
			for _, p := range b.Problems {
				if p.Key == key && strings.Contains(p.Text, "stuck") {
					stuck = p.Text
				}
			}
			for _, sc := range b.Scrapes {
				if sc.Target == static.Name && sc.Err == nil {
					scrapes++
					if stuck != "" {
						after++
					}
				}
			}
		case <-deadline:
			t.Fatalf("stuck %q; %d scrapes of the static target, %d after", stuck, scrapes, after)
		}
	}
	if !strings.Contains(stuck, "hung mount") {
		t.Errorf("problem %q", stuck)
	}
	// One blocked stat, not one a tick: the loop waits for the one in
	// flight. Its goroutine is the only one in the filesystem code.
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if n := strings.Count(stacks, "(*fileStamp).changed"); n != 1 {
		t.Errorf("%d reads of the hung file in flight", n)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("the source did not end 3 s after it was asked to")
	}
}
