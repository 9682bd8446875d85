package main

import (
	"runtime/debug"

	"github.com/vtop-dev/vtop/sources"
)

// Memory a target costs at most, measured (BENCHMARKS.md, issue 13): its
// history for the 60 s window, sparklines, normalizer cache and connection,
// about 200 KiB for a busy single-engine replica, with room to spare.
const (
	memBase      = 64 << 20
	memPerTarget = 256 << 10
)

// setMemoryLimit gives the Go runtime a soft memory limit sized from the
// fleet: what the targets' state, the large-body budget and the small body
// buffers of the scrapes in flight can hold, and the runtime's base. Under
// it the collector keeps the usual GOGC pace; a large fleet, whose heap
// would otherwise be allowed to double its live size (and more after a burst
// of hostile bodies), is collected earlier instead. A GOMEMLIMIT in the
// environment wins.
func setMemoryLimit(o *options, getenv func(string) string) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1)
	}
	n := int64(len(o.targets))
	limit := memBase + n*memPerTarget + sources.BodyBudget(o.maxBody) + int64(o.maxParallel)*sources.SmallBody
	debug.SetMemoryLimit(limit)
	return limit
}
