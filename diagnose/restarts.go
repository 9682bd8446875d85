package diagnose

import (
	"math"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// Restart is one restart of an endpoint's process, as its scrapes show it:
// process_start_time_seconds moved, or its counters went back to zero (or
// their _created stamps moved). The memory of the process that ended is
// what tells an OOM kill from a deploy.
type Restart struct {
	At         time.Time // the first scrape of the new process
	LastBefore time.Time // the last scrape of the old one (zero: none seen)
	StartedAt  time.Time // the new process's start, from process_start_time_seconds (zero: unknown)
	// The old process's API-server resident memory at its last scrape and
	// its highest over its life; the new one's at its first. NaN: unknown.
	RSSBefore, RSSPeak, RSSAfter float64
	// The endpoint's GPU memory at the old process's last scrape and at
	// the new one's first (NaN: no GPU joined).
	GPUMemBefore, GPUMemAfter float64
	// MemLimit is the memory its processes could use (cgroup or host),
	// bytes; 0 unknown.
	MemLimit float64
}

// Down is the gap the restart left: from the old process's last scrape to
// the new one's first (model loading, the supervisor's delay). Zero when
// unknown.
func (r Restart) Down() time.Duration {
	if r.LastBefore.IsZero() {
		return 0
	}
	return r.At.Sub(r.LastBefore)
}

// restartKeep bounds the restarts an endpoint remembers: a crash loop
// restarting every few seconds for hours must not grow memory.
const (
	restartKeep   = 64
	restartRetain = time.Hour
)

// procLife is what the engine follows of the process serving an endpoint
// now, to say what it held when it ended.
type procLife struct {
	last    time.Time
	rss     float64
	rssPeak float64
	gpuMem  float64
}

// observe records one successful scrape of the current process.
func (l *procLife) observe(t time.Time, snap *sources.Snapshot, gpuMem float64) {
	l.last = t
	l.rss = snap.Proc[sources.PRSS]
	if !math.IsNaN(l.rss) && (math.IsNaN(l.rssPeak) || l.rss > l.rssPeak) {
		l.rssPeak = l.rss
	}
	l.gpuMem = gpuMem
}

func newLife() procLife {
	return procLife{rss: math.NaN(), rssPeak: math.NaN(), gpuMem: math.NaN()}
}

// noteRestart records a restart seen at the scrape at t (snap is the new
// process's first) and starts following the new process.
func (ep *endpoint) noteRestart(t time.Time, snap *sources.Snapshot) {
	ep.restartedAt = t
	r := Restart{At: t, LastBefore: ep.life.last, RSSBefore: ep.life.rss, RSSPeak: ep.life.rssPeak,
		RSSAfter: snap.Proc[sources.PRSS], GPUMemBefore: ep.life.gpuMem, GPUMemAfter: ep.gpuMem(),
		MemLimit: ep.gpu.tree.MemLimit}
	if st := snap.Proc[sources.PStartTime]; !math.IsNaN(st) && st > 0 {
		r.StartedAt = time.UnixMilli(int64(st * 1000))
	}
	// Readers hold the old slice: a full log starts a fresh array.
	keep := ep.restarts
	cut := 0
	for cut < len(keep) && (t.Sub(keep[cut].At) > restartRetain || len(keep)-cut >= restartKeep) {
		cut++
	}
	if cut > 0 || len(keep) == cap(keep) {
		keep = append(make([]Restart, 0, min(len(keep)-cut+8, restartKeep)), keep[cut:]...)
	}
	ep.restarts = append(keep, r)
	ep.life = newLife()
}

// gpuMem is the GPU memory the endpoint's processes hold now, NaN unknown.
func (ep *endpoint) gpuMem() float64 {
	if !ep.gpu.set {
		return math.NaN()
	}
	return ep.gpu.joined.MemBytes
}

// recentRestarts is the endpoint's restarts within restartRetain of now.
func (ep *endpoint) recentRestarts(now time.Time) []Restart {
	rs := ep.restarts
	for len(rs) > 0 && now.Sub(rs[0].At) > restartRetain {
		rs = rs[1:]
	}
	return rs
}
