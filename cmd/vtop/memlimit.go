package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// What a target costs, measured (BENCHMARKS.md, issue 13): its history for
// the 60 s window, sparklines, its share of the normalizers' state and its
// connection, ~75–80 KiB live for a busy single-engine replica (FleetHeap;
// ~95–125 MB of heap in use at 1,000 targets in a whole process). The base
// is the runtime's own memory beside the heap (span fragmentation, GC
// metadata; no stack per target since the poller keeps no goroutine
// between polls); the bodies in flight get a small allowance.
// The limit binds at 1,000 busy targets: the runtime's default pace let
// the heap reach twice its live size (RSS 242–246 MiB on bodies that change
// on every line), where this limit holds it at 188 MiB for 2 % more CPU
// (BENCHMARKS.md, issue 23). Large bodies (hostile targets, the body
// budget) are not reserved ahead: a fleet that costs more than measured is
// followed (see followLiveHeap).
const (
	memBase      = 64 << 20
	memPerTarget = 112 << 10
	bodiesAhead  = 16 // small bodies in flight the limit allows for
)

// fleetMemoryLimit is the soft memory limit for a fleet: what the targets'
// state and a few small bodies in flight hold, and the runtime's base.
func fleetMemoryLimit(o *options) int64 {
	n := int64(len(o.targets))
	return memBase + n*memPerTarget + int64(min(o.maxParallel, bodiesAhead))*sources.SmallBody
}

// setMemoryLimit gives the Go runtime the fleet's soft memory limit. Under
// it the collector keeps the usual GOGC pace; a large fleet, whose heap
// would otherwise be allowed to double its live size (and more after a
// burst of hostile bodies), is collected earlier instead. A GOMEMLIMIT in
// the environment wins; it returns 0 then. So it does when the fleet is
// found only after the start (--prometheus, dns+, file_sd): an estimate
// from no targets would have the collector run without pause on the first
// refresh of a large fleet.
func setMemoryLimit(o *options, getenv func(string) string) int64 {
	if getenv("GOMEMLIMIT") != "" || o.prom.url != "" || len(o.discover) > 0 {
		return 0
	}
	limit := fleetMemoryLimit(o)
	debug.SetMemoryLimit(limit)
	return limit
}

// limitFor keeps the limit at least half as much again as the live heap:
// targets can cost more than the estimate (data-parallel engines, a
// target's 256 sub-series), and a limit under the live heap would have the
// collector run without pause.
func limitFor(base int64, live uint64) int64 {
	return max(base, int64(live)+int64(live)/2)
}

// followLiveHeap raises (and lowers back to base) the soft limit as the live
// heap measured by the last collection moves, every period.
func followLiveHeap(ctx context.Context, base int64, period time.Duration) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	t := time.NewTicker(period)
	defer t.Stop()
	cur := base
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		if want := limitFor(base, s[0].Value.Uint64()); want != cur {
			debug.SetMemoryLimit(want)
			cur = want
		}
	}
}
