package diagnose

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// Config sets windows and thresholds of the derivation. The clock is never
// read here: times come with the scrapes and with Frame(now).
type Config struct {
	Window       time.Duration // quantile and rate window (default 60 s)
	Interval     time.Duration // poll interval (default 1 s)
	StaleAfter   time.Duration // no answer for this long: stale (default 5 × interval, at least 5 s)
	RestartShown time.Duration // how long "restarted" stays on an endpoint (default 10 min)
	RosterShown  time.Duration // how long a join or departure stays in frames (default 5 min)
	SparkLen     int           // points per sparkline (default 240)
	MaxFrames    int           // hard cap of history frames per sub-series (default 512)
	MaxSubs      int           // sub-series (model, engine) kept per endpoint (default sources.DefaultMaxSubs)
	GPURetention time.Duration // GPU history kept per GPU and endpoint (default 30 min, at least 2 × Window)
	GPUMaxPoints int           // hard cap of GPU readings kept per series (default 3600)
	XIDRetention time.Duration // how long XID events stay in frames (default 1 h)
}

func (c *Config) defaults() {
	if c.Window <= 0 {
		c.Window = 60 * time.Second
	}
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	// The callers refuse longer ones, naming where they came from; past
	// these the retention arithmetic would overflow.
	c.Window, c.Interval = min(c.Window, sources.MaxWindow), min(c.Interval, sources.MaxInterval)
	if c.StaleAfter <= 0 {
		c.StaleAfter = max(5*c.Interval, 5*time.Second)
	}
	if c.RestartShown <= 0 {
		c.RestartShown = 10 * time.Minute
	}
	if c.RosterShown <= 0 {
		c.RosterShown = 5 * time.Minute
	}
	if c.SparkLen <= 0 {
		c.SparkLen = 240
	}
	if c.MaxFrames <= 0 {
		c.MaxFrames = 512
	}
	if c.MaxSubs <= 0 {
		c.MaxSubs = sources.DefaultMaxSubs
	}
	if c.GPURetention <= 0 {
		c.GPURetention = 30 * time.Minute
	}
	if c.GPUMaxPoints <= 0 {
		c.GPUMaxPoints = 3600
	}
	if c.XIDRetention <= 0 {
		c.XIDRetention = time.Hour
	}
}

// SparkWindow is the short window each sparkline point is computed over:
// a sixth of the window, at least five polls.
func (c *Config) SparkWindow() time.Duration {
	return max(c.Window/6, 5*c.Interval)
}

// Engine holds the history of every target and derives frames from it. It is
// not safe for concurrent use: one goroutine feeds it and asks for frames.
type Engine struct {
	cfg        Config
	staleSet   bool // Config.StaleAfter was given, not derived from the interval
	eps        []*endpoint
	fleetSpark sparkRing
	lastFleet  time.Time
	gpu        gpuState
	roster     roster
}

type endpoint struct {
	name        string
	maxNumSeqs  int
	pool        string
	pod         string
	namespace   string
	state       State
	since       time.Time
	lastErr     string
	notVLLM     bool // the last error: it answers, but not with vLLM's metrics
	lastAttempt time.Time
	lastSuccess time.Time
	dur         time.Duration
	restartedAt time.Time
	procStart   float64
	life        procLife  // the process serving now: its memory, for the next restart
	restarts    []Restart // oldest first, within restartRetain; readers share it
	shift       shiftState
	// What the engine reads of the newest snapshot once it is ingested:
	// its header (snap points at head; Subs nil) and its sub-series' keys
	// and cache configs. Its samples live in history; the snapshot itself
	// is not kept (a busy target's is ~7 KB).
	snap *sources.Snapshot
	head sources.Snapshot
	refs []subRef
	subs map[sources.SubKey]*subHistory
	// http is the API server's responses by status (sources.Snapshot.HTTP),
	// the endpoint's own history; nil while it serves none. httpSeen is
	// the last scrape that had them.
	http     *statusHistory
	httpSeen time.Time
	spark    sparkRing
	trend    Trend // over the window ending at the newest spark point
	gpu      endpointGPU

	// Derived at ingest (work happens when data arrives), reused by frames.
	dirty     bool
	win, sp   acc // whole endpoint over the window / the spark window
	subStats  []SubView
	stats     *Stats          // its one sub-series' (in subStats), or from win
	modelAccs map[string]*acc // by model, when it serves more than one
	winModel  bool            // it serves one: win is that model's acc
}

// TargetInfo is what the engine needs to know about a target up front.
type TargetInfo struct {
	Name           string
	MaxNumSeqs     int
	Pool           string // replica_imbalance's comparison group; empty: the model
	Pod, Namespace string // where discovery says (sources.Target)
}

// New returns an engine for the given targets (indexed like the poller's).
func New(cfg Config, targets []TargetInfo) *Engine {
	staleSet := cfg.StaleAfter > 0
	cfg.defaults()
	e := &Engine{cfg: cfg, fleetSpark: sparkRing{max: cfg.SparkLen}, staleSet: staleSet}
	for _, t := range targets {
		e.AddTarget(t)
	}
	return e
}

// AddTarget adds a target (one discovered while running) and returns its
// index.
func (e *Engine) AddTarget(t TargetInfo) int {
	e.eps = append(e.eps, &endpoint{name: t.Name, maxNumSeqs: t.MaxNumSeqs, pool: t.Pool, pod: t.Pod, namespace: t.Namespace,
		subs: map[sources.SubKey]*subHistory{}, spark: sparkRing{max: e.cfg.SparkLen}, procStart: math.NaN(), trend: UnknownTrend(),
		life: newLife(), shift: newShiftState()})
	return len(e.eps) - 1
}

// SetInterval sets the poll interval when a source learns it late (a
// Prometheus server unreachable at start tells its scrape interval once
// it answers); a StaleAfter derived from the interval follows it.
func (e *Engine) SetInterval(d time.Duration) {
	if d <= 0 || d == e.cfg.Interval {
		return
	}
	e.cfg.Interval = d
	if !e.staleSet {
		e.cfg.StaleAfter = 0
		e.cfg.defaults()
	}
}

// Config returns the engine's configuration (with defaults filled in).
func (e *Engine) Config() Config { return e.cfg }

// SetWindow changes the quantile/rate window; history kept for the old
// window is reused, so a larger window fills in as polls arrive. A window
// past sources.MaxWindow is that bound.
func (e *Engine) SetWindow(w time.Duration) {
	w = min(w, sources.MaxWindow)
	if w <= 0 || w == e.cfg.Window {
		return
	}
	e.cfg.Window = w
	for _, ep := range e.eps {
		ep.dirty = true
	}
}

// retention and spacing of history frames for the current window: at least
// ~100 frames per window, and one spare frame beyond it as the anchor.
func (e *Engine) spacing() time.Duration { return e.cfg.Window / 100 }
func (e *Engine) retention() time.Duration {
	return e.cfg.Window + 2*e.spacing() + 2*e.cfg.Interval
}

// frameCap is the ring size a sub-series starts with: the frames one
// retention holds at the poll interval, and a few spare for jitter.
func (e *Engine) frameCap() int {
	return min(int(e.retention()/max(e.spacing(), e.cfg.Interval))+4, e.cfg.MaxFrames)
}

// statusSpacing is the spacing of an endpoint's HTTP-status frames: a
// share of 4xx over the window needs no second-by-second frames (the
// window's edge moves by at most an eighth of it), and at the engine's
// spacing they cost ~6 KiB an endpoint for one counter family.
func (e *Engine) statusSpacing() time.Duration { return max(e.cfg.Window/8, e.spacing()) }

// statusCap is the ring an endpoint's HTTP-status history starts with.
func (e *Engine) statusCap() int {
	return min(int(e.retention()/max(e.statusSpacing(), e.cfg.Interval))+4, e.cfg.MaxFrames)
}

// Ingest applies one poll result of target i.
func (e *Engine) Ingest(i int, s sources.Scrape) {
	if i < 0 || i >= len(e.eps) {
		return
	}
	ep := e.eps[i]
	ep.lastAttempt = s.Time
	ep.dur = s.Duration
	ep.notVLLM = s.Err != nil && errors.Is(s.Err, sources.ErrNotVLLM)
	if s.Err != nil {
		ep.lastErr = s.Err.Error()
		if ep.state != StateDown {
			ep.state, ep.since = StateDown, s.Time
		}
		return
	}
	ep.lastErr = ""
	if ep.state != StateUp {
		ep.state, ep.since = StateUp, s.Time
	}
	ep.lastSuccess = s.Time
	snap := capSubs(s.Data, e.cfg.MaxSubs)
	restarted := false
	if st := snap.Proc[sources.PStartTime]; !math.IsNaN(st) {
		if !math.IsNaN(ep.procStart) && math.Abs(st-ep.procStart) > 1 {
			restarted = true
		}
		ep.procStart = st
	}
	spacing, retain := e.spacing(), e.retention()
	for k := range snap.Subs {
		sub := &snap.Subs[k]
		h := ep.subs[sub.Key]
		if h == nil {
			h = newSubHistory(sub.Key, e.frameCap())
			ep.subs[sub.Key] = h
		}
		if h.add(s.Time, sub, spacing, retain, e.cfg.MaxFrames) {
			restarted = true
		}
	}
	if snap.HTTP != nil {
		if ep.http == nil {
			ep.http = newStatusHistory(e.statusCap())
		}
		ep.httpSeen = s.Time
	} else if ep.http != nil && s.Time.Sub(ep.httpSeen) > retain {
		ep.http = nil
	}
	if ep.http != nil {
		ep.http.add(s.Time, snap.HTTP, e.statusSpacing(), retain, e.cfg.MaxFrames)
	}
	// One restart per scrape, however many signals show it.
	if restarted {
		ep.noteRestart(s.Time, snap)
	}
	if ep.life.observe(s.Time, snap, ep.gpuMem()) {
		ep.cacheLearned()
	}
	// Forget sub-series (engines, models) gone for longer than the window,
	// and the least recently seen beyond the cap.
	for k, h := range ep.subs {
		if s.Time.Sub(h.lastSeen) > retain {
			delete(ep.subs, k)
		}
	}
	evictOldest(ep.subs, e.cfg.MaxSubs)
	ep.head = *snap
	ep.head.Subs = nil
	ep.snap = &ep.head
	ep.refs = ep.refs[:0]
	for k := range snap.Subs {
		ep.refs = append(ep.refs, subRef{key: snap.Subs[k].Key, cache: snap.Subs[k].Cache})
	}
	e.derive(ep, s.Time)
	e.observeShifts(ep, s.Time)
	sp := ep.sp.sparkStats() // only what a sparkline point draws
	ep.spark.push(sparkPoint(s.Time, &sp))
	ep.trend = TrendOf(ep.spark.view(), s.Time, e.cfg.Window)
}

// derive recomputes an endpoint's cached accumulators over the window ending at t.
func (e *Engine) derive(ep *endpoint, t time.Time) {
	ep.dirty, ep.winModel = false, false
	ep.win, ep.sp = newAcc(), newAcc()
	// A fresh slice: frames already handed out keep the old one.
	ep.subStats = nil
	clear(ep.modelAccs)
	if ep.modelAccs == nil {
		ep.modelAccs = map[string]*acc{}
	}
	if ep.snap == nil {
		st := ep.win.stats()
		ep.stats = &st
		return
	}
	sw := e.cfg.SparkWindow()
	// An endpoint serving one model (most do) has that model's acc in
	// win: the same merges in the same order. Frame reads it there.
	single := len(ep.refs) > 0 && singleModel(ep.refs)
	for _, sub := range ep.refs {
		h := ep.subs[sub.key]
		if h == nil {
			continue
		}
		one := subWindow(h, t, e.cfg.Window, sub.cache)
		ep.win.merge(&one)
		ep.winModel = single
		if !single {
			m := ep.modelAccs[sub.key.Model]
			if m == nil {
				m = &acc{}
				*m = newAcc()
				ep.modelAccs[sub.key.Model] = m
			}
			m.merge(&one)
		}
		ep.subStats = append(ep.subStats, SubView{Key: sub.key, Stats: one.stats()})
		if a, b, ok := h.window(t, sw); ok {
			ep.sp.addSub(h, a, b, sub.cache, sparkHists)
		} else if h.n > 0 {
			ep.sp.addGauges(h, sub.cache)
		}
	}
	// The API server's responses are the endpoint's, not a sub-series':
	// in its acc (and so its model's and the fleet's), never a SubView's.
	ep.win.addStatus(ep.http, t, e.cfg.Window)
	if len(ep.subStats) == 1 && len(ep.refs) == 1 {
		// One sub-series (most endpoints): win is its acc merged into an
		// empty one, the same numbers, so its stats are the endpoint's.
		// win's labeled rates still take stats' order: Frame merges win on.
		// Its one engine is the endpoint: the API server's responses are
		// its too (a copy of the Stats for them alone cost ~2 KiB an
		// endpoint, and a frame kept the old one).
		ep.stats = &ep.subStats[0].Stats
		ep.win.sortLabeled()
		if len(ep.win.http) > 0 {
			ep.win.httpStats(ep.stats)
		}
	} else {
		st := ep.win.stats()
		ep.stats = &st
	}
}

// subWindow is one sub-series' acc over the window ending at t: its gauges
// alone while the window holds a single frame.
func subWindow(h *subHistory, t time.Time, w time.Duration, cache *sources.CacheConfig) acc {
	one := newAcc()
	if a, b, ok := h.window(t, w); ok {
		one.addSub(h, a, b, cache, allHists)
	} else if h.n > 0 {
		one.engines++
		one.addGauges(h, cache)
	}
	return one
}

// subRef is a sub-series of the newest snapshot: what derive and view read.
type subRef struct {
	key   sources.SubKey
	cache *sources.CacheConfig
}

// singleModel reports whether every sub-series serves the first one's model.
func singleModel(refs []subRef) bool {
	for i := range refs {
		if refs[i].key.Model != refs[0].key.Model {
			return false
		}
	}
	return true
}

// models lists the models served, in the snapshot's order (Snapshot.Models).
func models(refs []subRef) []string {
	var out []string
	for _, r := range refs {
		if len(out) == 0 || out[len(out)-1] != r.key.Model {
			out = append(out, r.key.Model)
		}
	}
	return out
}

// Frame builds the picture at time now.
func (e *Engine) Frame(now time.Time) *Frame {
	f := &Frame{Time: now, Window: e.cfg.Window, Interval: e.cfg.Interval,
		Endpoints: make([]EndpointView, len(e.eps))}
	fleet, fleetSp := newAcc(), newAcc()
	models := map[string]*ModelView{}
	modelAcc := map[string]*acc{}
	for i, ep := range e.eps {
		if ep.dirty {
			e.derive(ep, ep.lastSuccess)
			ep.trend = TrendOf(ep.spark.view(), ep.lastSuccess, e.cfg.Window)
		}
		v := e.view(i, ep, now)
		f.Endpoints[i] = v
		if v.LastSuccess.After(f.Newest) {
			f.Newest = v.LastSuccess
		}
		f.Fleet.Total++
		if v.State != StateUp || v.Kind != sources.KindEngine {
			continue
		}
		f.Fleet.Up++
		fleet.merge(&ep.win)
		fleetSp.merge(&ep.sp)
		add := func(m string, a *acc) {
			if modelAcc[m] == nil {
				x := newAcc()
				modelAcc[m] = &x
				models[m] = &ModelView{Model: m}
			}
			modelAcc[m].merge(a)
			models[m].Endpoints++
		}
		if ep.winModel {
			add(ep.refs[0].key.Model, &ep.win)
		}
		for m, a := range ep.modelAccs {
			add(m, a)
		}
	}
	f.Fleet.Stats = fleet.stats()
	for m, mv := range models {
		mv.Stats = modelAcc[m].stats()
		mv.RouterQueued, mv.RouterInflight = math.NaN(), math.NaN()
		f.Fleet.Models = append(f.Fleet.Models, *mv)
	}
	sort.Slice(f.Fleet.Models, func(i, j int) bool { return f.Fleet.Models[i].Model < f.Fleet.Models[j].Model })
	joinRouters(f)
	if now.Sub(e.lastFleet) >= e.cfg.Interval*9/10 {
		st := fleetSp.sparkStats()
		e.fleetSpark.push(sparkPoint(now, &st))
		e.lastFleet = now
	}
	f.Fleet.Spark, f.Fleet.SparkLong = e.fleetSpark.view(), e.fleetSpark.longView()
	f.Roster, f.RosterMore = e.roster.recent(now, e.cfg.RosterShown), e.roster.dropped
	e.gpuFrame(f)
	return f
}

// joinRouters reads the routers' per-model queues (Dynamo's frontend) into
// the pools of the engines serving those models (its workers): one pool
// whose queue is the routers' and whose capacity (running, KV, batch caps)
// is the workers'. Dynamo counts a request queued until its first token,
// so the workers' own waiting requests are among those: the routers'
// count replaces the workers' sum rather than adding to it, in the pool
// and in the fleet. A model no engine up serves has no pool to join.
func joinRouters(f *Frame) {
	type front struct {
		names                  []string
		queued, inflight, seqs float64
	}
	byModel := map[string]*front{}
	for i := range f.Endpoints {
		v := &f.Endpoints[i]
		if v.State != StateUp || v.Kind != sources.KindRouter {
			continue
		}
		for _, r := range v.Router {
			x := byModel[r.Model]
			if x == nil {
				x = &front{queued: math.NaN(), inflight: math.NaN(), seqs: math.NaN()}
				byModel[r.Model] = x
			}
			x.names = append(x.names, v.Name)
			x.queued = nanAdd(x.queued, r.Values[sources.RQueued])
			x.inflight = nanAdd(x.inflight, r.Values[sources.RInflight])
			x.seqs = NaNMax(x.seqs, r.Values[sources.RMaxNumSeqs])
		}
	}
	// The frontend knows each worker's --max-num-seqs, which vLLM does not
	// serve: a worker of one model with none configured takes it.
	for i := range f.Endpoints {
		v := &f.Endpoints[i]
		if v.Kind != sources.KindEngine || v.MaxNumSeqs > 0 || len(v.Models) != 1 {
			continue
		}
		if x := byModel[v.Models[0]]; x != nil && x.seqs >= 1 && x.seqs <= 1<<20 {
			v.MaxNumSeqs = int(x.seqs)
		}
	}
	for m := range f.Fleet.Models {
		mv := &f.Fleet.Models[m]
		x := byModel[mv.Model]
		if x == nil || math.IsNaN(x.queued) {
			continue
		}
		mv.Routers, mv.RouterQueued, mv.RouterInflight = x.names, x.queued, x.inflight
		workers := mv.Stats.Waiting
		mv.Stats.Waiting = x.queued
		fw := &f.Fleet.Stats.Waiting
		if math.IsNaN(workers) {
			workers = 0
		}
		*fw = nanAdd(*fw, x.queued-workers)
	}
}

func (e *Engine) view(i int, ep *endpoint, now time.Time) EndpointView {
	v := EndpointView{
		Index: i, Name: ep.name, State: ep.state, Since: ep.since, LastError: ep.lastErr, NotVLLM: ep.notVLLM,
		LastAttempt: ep.lastAttempt, LastSuccess: ep.lastSuccess, ScrapeDuration: ep.dur,
		MaxNumSeqs: ep.maxNumSeqs, Pool: ep.pool, Pod: ep.pod, Namespace: ep.namespace, RSS: math.NaN(),
		Subs: ep.subStats, Spark: ep.spark.view(), SparkLong: ep.spark.longView(), GPU: ep.gpu.joined, Trend: ep.trend,
	}
	if ep.stats != nil {
		v.Stats = *ep.stats
	}
	if !ep.gpu.set {
		v.GPU = EndpointGPU{MemBytes: math.NaN(), UtilGPU: math.NaN()}
	}
	if ep.snap == nil {
		// Never answered: what it is and every number are unknown, not
		// an engine with zeros.
		v.Kind = sources.KindUnknown
	}
	if ep.lastSuccess.IsZero() {
		v.Stats = UnknownStats()
	}
	if ep.state == StateUp && now.Sub(ep.lastSuccess) > e.cfg.StaleAfter {
		v.State, v.Since = StateStale, ep.lastSuccess.Add(e.cfg.StaleAfter)
	}
	if !ep.restartedAt.IsZero() && now.Sub(ep.restartedAt) < e.cfg.RestartShown {
		v.RestartedAt = ep.restartedAt
	}
	v.Restarts = ep.recentRestarts(now)
	v.Shifts = ep.shift.view(now)
	if s := ep.snap; s != nil {
		v.Kind, v.Version, v.Models, v.Warnings, v.Samples = s.Kind, s.Version, models(ep.refs), s.Warnings, s.Samples
		v.RSS = s.Proc[sources.PRSS]
		v.Lora, v.Router = s.Lora, s.Router
		// A router's waiting is what it holds: the fleet table's run/wait.
		for _, r := range s.Router {
			v.Stats.Waiting = nanAdd(v.Stats.Waiting, r.Values[sources.RQueued])
		}
		for _, r := range ep.refs {
			if r.cache != nil {
				v.Cache = r.cache
				break
			}
		}
	}
	return v
}

// capSubs keeps the first max sub-series of a snapshot (its order is stable:
// by model, then engine) and says so on the endpoint: one endpoint with
// thousands of model names must not cost the whole fleet's memory.
func capSubs(snap *sources.Snapshot, max int) *sources.Snapshot {
	if len(snap.Subs) <= max {
		return snap
	}
	c := *snap
	c.Subs = snap.Subs[:max:max]
	c.Warnings = append(slices.Clip(snap.Warnings), fmt.Sprintf("too many models/engines: %d sub-series, the first %d kept", len(snap.Subs), max))
	return &c
}

// evictOldest drops the least recently seen sub-series beyond max.
func evictOldest(subs map[sources.SubKey]*subHistory, max int) {
	if len(subs) <= max {
		return
	}
	all := make([]*subHistory, 0, len(subs))
	for _, h := range subs {
		all = append(all, h)
	}
	slices.SortFunc(all, func(a, b *subHistory) int { return a.lastSeen.Compare(b.lastSeen) })
	for _, h := range all[:len(all)-max] {
		delete(subs, h.key)
	}
}
