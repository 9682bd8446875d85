package discovery

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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
