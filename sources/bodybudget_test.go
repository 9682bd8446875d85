package sources

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHostileBodiesBoundedMemory: 16 targets serving oversize bodies (44 MiB
// plain) and gzip bombs (64 MiB of zeros inflated from 64 KiB), their
// responses held back until all 16 requests have arrived so that every read
// runs at once, keep the process' heap under a bound: growth beyond
// SmallBody comes from one shared budget, so the peak does not depend on how
// many large reads coincide. Measured from the runtime's heap (sampled),
// not from timing; every scrape must fail with a clear error.
func TestHostileBodiesBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("reads ~1 GiB of hostile bodies")
	}
	const n, bound = 16, 160 << 20 // 481 MiB without the budget; 70–103 MiB with it, ten runs beside a CPU hog
	var zeros bytes.Buffer
	zw := gzip.NewWriter(&zeros)
	chunk := make([]byte, 64<<10)
	for range (64 << 20) / len(chunk) {
		zw.Write(chunk)
	}
	zw.Close()
	bomb := zeros.Bytes()

	var arrived atomic.Int32
	all := make(chan struct{})
	var once sync.Once
	hold := func(r *http.Request) {
		if arrived.Add(1) == n {
			once.Do(func() { close(all) })
		}
		select { // all n at once; a loaded machine that never gets there still proceeds
		case <-all:
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	}
	oversize := serve(t, func(w http.ResponseWriter, r *http.Request) {
		hold(r)
		line := []byte(strings.Repeat("vllm:num_requests_running{model_name=\"m\"} 1\n", len(chunk)/45))
		for sent := 0; sent < 44<<20; sent += len(line) {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	})
	gzbomb := serve(t, func(w http.ResponseWriter, r *http.Request) {
		hold(r)
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb)
	})
	var targets []Target
	for i := range n {
		u := oversize
		if i%2 == 1 {
			u = gzbomb
		}
		targets = append(targets, Target{Name: fmt.Sprint("hostile", i), URL: fmt.Sprintf("%s?t=%d", u, i)})
	}
	f, _ := NewFetcher(HTTPConfig{Timeout: 30 * time.Second})
	cfg := DefaultPollerConfig()
	cfg.Interval = time.Hour // one poll each
	p := NewPoller(targets, f, cfg)

	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	go p.Run(ctx)
	var got []Indexed
	for len(got) < n {
		select {
		case <-p.Mailbox().Ready():
			got = p.Mailbox().Take(got)
		case <-time.After(2 * time.Minute):
			t.Fatalf("%d of %d scrapes done", len(got), n)
		}
	}
	cancel()
	close(done)
	<-sampled
	for _, s := range got {
		if s.Scrape.Err == nil {
			t.Errorf("%s: a hostile body was read", s.Scrape.Target)
		}
	}
	t.Logf("peak heap %d MiB with %d large reads at once (%d requests arrived together); first error: %v",
		peak>>20, n, arrived.Load(), got[0].Scrape.Err)
	if peak > bound {
		t.Errorf("peak heap %d MiB, want under %d MiB", peak>>20, bound>>20)
	}
	if used := f.budget.used.Load(); used != 0 {
		t.Errorf("%d bytes of the large-body budget still held after every scrape ended", used)
	}
}
