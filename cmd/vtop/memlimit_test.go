package main

import (
	"fmt"
	"math"
	"runtime/debug"
	"testing"

	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/discovery"
)

// TestMemoryLimitFromFleet: the soft memory limit grows with the fleet and
// leaves a GOMEMLIMIT from the environment alone.
func TestMemoryLimitFromFleet(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	o := &options{maxBody: sources.DefaultMaxBody, maxParallel: 64}
	for i := range 1000 {
		o.targets = append(o.targets, sources.Target{Name: fmt.Sprint(i)})
	}
	env := func(string) string { return "" }
	got := setMemoryLimit(o, env)
	// 64 MiB + 1,000 × 112 KiB + 16 × 512 KiB: 181 MiB, under the 200 MB
	// that 1,000 targets may take.
	if want := int64(64<<20 + 1000*112<<10 + 16*512<<10); got != want || debug.SetMemoryLimit(-1) != want || want > 190<<20 {
		t.Errorf("limit for 1,000 targets %d MiB, want %d MiB", got>>20, want>>20)
	}
	o.targets = o.targets[:10]
	if small := setMemoryLimit(o, env); small >= got || small < 64<<20 {
		t.Errorf("limit for 10 targets %d MiB (1,000: %d MiB)", small>>20, got>>20)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	setMemoryLimit(o, func(k string) string {
		if k == "GOMEMLIMIT" {
			return "1GiB"
		}
		return ""
	})
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT in the environment overridden: limit %d", l)
	}
	// A fleet found after the start has no estimate: no limit from one.
	for _, found := range []*options{{prom: promOptions{url: "http://127.0.0.1:9090"}}, {discover: []discovery.Spec{{Kind: "file", Path: "sd.json"}}}} {
		if l := setMemoryLimit(found, env); l != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
			t.Errorf("a limit of %d MiB for a fleet not known yet (%+v)", l>>20, found)
		}
	}
}

// TestMemoryLimitFollowsLiveHeap: a live heap beyond the fleet's estimate
// raises the limit to half as much again (a limit under the live heap would
// have the collector run without pause), and it comes back down after.
func TestMemoryLimitFollowsLiveHeap(t *testing.T) {
	const base = 300 << 20
	for _, c := range []struct{ live, want int64 }{
		{live: 100 << 20, want: base},
		{live: 200 << 20, want: base},
		{live: 400 << 20, want: 600 << 20},
		{live: 50 << 20, want: base},
	} {
		if got := limitFor(base, uint64(c.live)); got != c.want {
			t.Errorf("live %d MiB: limit %d MiB, want %d MiB", c.live>>20, got>>20, c.want>>20)
		}
	}
}
