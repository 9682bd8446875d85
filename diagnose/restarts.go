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
	// The KV cache the old process had and the new one came back with
	// (tokens, all engines), the --gpu-memory-utilization that sized them
	// and the cache's dtype: what a deploy changed. NaN, "": unknown (the
	// new process's are read from its first scrapes that expose them).
	KVBefore, KVAfter           float64
	MemUtilBefore, MemUtilAfter float64
	DtypeBefore, DtypeAfter     string
}

// CacheChanged says the new process came back with another KV cache: its
// size by a tenth or more, or another dtype.
func (r Restart) CacheChanged() bool {
	if r.DtypeBefore != "" && r.DtypeAfter != "" && r.DtypeBefore != r.DtypeAfter {
		return true
	}
	return r.KVBefore > 0 && r.KVAfter > 0 && math.Abs(r.KVAfter/r.KVBefore-1) >= 0.1
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
	cache   lifeCache
}

// lifeCache is the KV cache a process was started with, as its
// cache_config_info says: tokens over all its engines, the
// --gpu-memory-utilization and the dtype (NaN, "": not exposed).
type lifeCache struct {
	tokens, util float64
	dtype        string
}

// cacheOf reads a scrape's KV cache configuration.
func cacheOf(snap *sources.Snapshot) lifeCache {
	c := lifeCache{tokens: math.NaN(), util: math.NaN()}
	for i := range snap.Subs {
		cc := snap.Subs[i].Cache
		if cc == nil {
			continue
		}
		if n := cc.CapacityTokens(); n > 0 {
			c.tokens = nanAdd(c.tokens, float64(n))
		}
		c.util = NaNMax(c.util, cc.GPUMemUtil)
		if cc.CacheDtype != "" {
			c.dtype = cc.CacheDtype
		}
	}
	return c
}

// observe records one successful scrape of the current process. It
// reports whether the process's KV cache was learned at this scrape (a
// process's cache is sized once, at its start: read until known).
func (l *procLife) observe(t time.Time, snap *sources.Snapshot, gpuMem float64) bool {
	l.last = t
	l.rss = snap.Proc[sources.PRSS]
	if !math.IsNaN(l.rss) && (math.IsNaN(l.rssPeak) || l.rss > l.rssPeak) {
		l.rssPeak = l.rss
	}
	l.gpuMem = gpuMem
	if !math.IsNaN(l.cache.tokens) && !math.IsNaN(l.cache.util) && l.cache.dtype != "" {
		return false
	}
	c, learned := cacheOf(snap), false
	if math.IsNaN(l.cache.tokens) && !math.IsNaN(c.tokens) {
		l.cache.tokens, learned = c.tokens, true
	}
	if math.IsNaN(l.cache.util) && !math.IsNaN(c.util) {
		l.cache.util, learned = c.util, true
	}
	if l.cache.dtype == "" && c.dtype != "" {
		l.cache.dtype, learned = c.dtype, true
	}
	return learned
}

// cacheLearned fills the newest restart's new cache once the process it
// started exposes it. Readers hold the old slice: the restart is replaced
// in a copy.
func (ep *endpoint) cacheLearned() {
	n := len(ep.restarts)
	if n == 0 || !ep.restarts[n-1].At.Equal(ep.restartedAt) {
		return
	}
	r := ep.restarts[n-1]
	r.KVAfter, r.MemUtilAfter, r.DtypeAfter = ep.life.cache.tokens, ep.life.cache.util, ep.life.cache.dtype
	ep.restarts = append(append(make([]Restart, 0, cap(ep.restarts)), ep.restarts[:n-1]...), r)
}

func newLife() procLife {
	return procLife{rss: math.NaN(), rssPeak: math.NaN(), gpuMem: math.NaN(), cache: lifeCache{tokens: math.NaN(), util: math.NaN()}}
}

// noteRestart records a restart seen at the scrape at t (snap is the new
// process's first) and starts following the new process.
func (ep *endpoint) noteRestart(t time.Time, snap *sources.Snapshot) {
	ep.restartedAt = t
	r := Restart{At: t, LastBefore: ep.life.last, RSSBefore: ep.life.rss, RSSPeak: ep.life.rssPeak,
		RSSAfter: snap.Proc[sources.PRSS], GPUMemBefore: ep.life.gpuMem, GPUMemAfter: ep.gpuMem(),
		MemLimit: ep.gpu.tree.MemLimit, KVBefore: ep.life.cache.tokens, MemUtilBefore: ep.life.cache.util, DtypeBefore: ep.life.cache.dtype,
		KVAfter: math.NaN(), MemUtilAfter: math.NaN()}
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
