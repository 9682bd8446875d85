package sources

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// PollerConfig sets the poller's timing and bounds.
type PollerConfig struct {
	Interval    time.Duration // poll period of each target
	MaxParallel int           // scrapes in flight at once within their fair share (see slot)
	MaxBackoff  time.Duration // longest wait between polls of a target that stays down
	MaxSamples  int
	Clock       func() time.Time // time.Now when nil
	// KeepBody keeps what --record needs of each body normalized without
	// error: its changed lines (Scrape.Lines), or a copy (Scrape.Body).
	KeepBody bool
}

// DefaultPollerConfig returns the defaults: 1 s interval, 64 scrapes at once,
// back off to 30 s while a target is down.
func DefaultPollerConfig() PollerConfig {
	return PollerConfig{Interval: time.Second, MaxParallel: 64, MaxBackoff: 30 * time.Second, MaxSamples: DefaultMaxSamples}
}

// bodies are the body buffers, shared: only scrapes in flight hold one, so a
// fleet of 1,000 targets keeps dozens of ~100 KiB buffers, not a thousand.
// Nothing read from a body outlives its scrape (the normalizer copies out).
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Poller polls targets on their own schedules and hands results to a Mailbox.
// A target's timer starts its next poll when the last one is done, so polls
// of one target never overlap; a semaphore bounds how many run at once
// across targets, and a scrape holds its slot for at most its fair share of
// them (see fairShare). Targets can be added and removed while it runs
// (discovery): every target of a run is on the one poller, so
// --max-parallel, the fair share and the start offsets cover them all.
type Poller struct {
	cfg   PollerConfig
	fetch *Fetcher
	box   *Mailbox
	sem   chan struct{}
	count atomic.Int64 // targets polled now

	mu      sync.Mutex
	gen     uint64   // PollNow requests so far; a target mid-scrape catches up on it
	targets []Target // by mailbox index; a removed target's index is reused
	used    []bool   // whether targets[i] is a target now
	free    []int    // indices of removed targets
	byName  map[string]int
	runs    []*targetPoll // by index, while Run runs; nil before and for a free index
	ctx     context.Context
	keys    uint64 // runs started so far: a run's key tells its results from a former target's
	wg      sync.WaitGroup
}

// NewPoller builds a poller; results arrive in the returned Mailbox, indexed
// like targets (a target added later takes a free index or the next one).
func NewPoller(targets []Target, f *Fetcher, cfg PollerConfig) *Poller {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.MaxParallel <= 0 {
		cfg.MaxParallel = 64
	}
	if cfg.MaxBackoff < cfg.Interval {
		cfg.MaxBackoff = cfg.Interval
	}
	if cfg.MaxSamples <= 0 {
		cfg.MaxSamples = DefaultMaxSamples
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	p := &Poller{cfg: cfg, fetch: f, box: NewMailbox(len(targets)), sem: make(chan struct{}, cfg.MaxParallel),
		byName: map[string]int{}}
	p.Add(targets...)
	return p
}

// Mailbox returns where results arrive.
func (p *Poller) Mailbox() *Mailbox { return p.box }

// Targets returns the targets polled now, in index order.
func (p *Poller) Targets() []Target {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Target
	for i, t := range p.targets {
		if p.used[i] {
			out = append(out, t)
		}
	}
	return out
}

// Len is how many targets are polled now.
func (p *Poller) Len() int { return int(p.count.Load()) }

// Add polls ts too (from Run's start, or at once while it runs); a name
// already polled is left as it is.
func (p *Poller) Add(ts ...Target) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range ts {
		if _, ok := p.byName[t.Name]; ok {
			continue
		}
		i := len(p.targets)
		if n := len(p.free); n > 0 {
			i, p.free = p.free[n-1], p.free[:n-1]
		} else {
			p.targets, p.used, p.runs = append(p.targets, Target{}), append(p.used, false), append(p.runs, nil)
		}
		p.targets[i], p.used[i], p.byName[t.Name] = t, true, i
		p.count.Add(1)
		if p.ctx != nil {
			p.start(i)
		}
	}
}

// Remove stops polling the named targets: a scrape of one in flight is
// cancelled, and no result of theirs reaches the mailbox from here on.
func (p *Poller) Remove(names ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range names {
		i, ok := p.byName[name]
		if !ok {
			continue
		}
		delete(p.byName, name)
		p.targets[i], p.used[i] = Target{}, false
		p.free = append(p.free, i)
		p.count.Add(-1)
		p.box.close(i)
		if r := p.runs[i]; r != nil {
			p.runs[i] = nil
			r.cancel()
			if r.timer.Stop() {
				r.finish() // its next poll never starts
			}
		}
	}
}

// offset spreads the targets' first polls so a large fleet does not poll in
// one burst; it is stable per target URL, and at most a second, so a long
// --interval still shows numbers at once.
func (p *Poller) offset(t Target) time.Duration {
	if p.count.Load() <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(t.URL))
	return time.Duration(uint64(h.Sum32()) % uint64(min(p.cfg.Interval, time.Second)))
}

// fairShare is how long one scrape may hold a shared slot: the slot time of
// one interval divided among the targets. A scrape still running then (a hung
// or slow-dripping target) gives its slot back and finishes outside the bound,
// so 700 hung targets cannot keep a healthy one waiting for its turn; the
// timeout still ends it. A hung scrape costs a socket, not CPU.
func (p *Poller) fairShare() time.Duration {
	n := max(p.count.Load(), 1)
	return max(p.cfg.Interval*time.Duration(cap(p.sem))/time.Duration(n), time.Millisecond)
}

// slot is one target's claim on the shared semaphore, given back once: by
// the scrape's end or by the fair-share timer, whichever comes first.
type slot struct {
	sem   chan struct{}
	held  atomic.Bool
	timer *time.Timer
}

func (s *slot) release() {
	if s.held.CompareAndSwap(true, false) {
		<-s.sem
	}
}

// Run polls until ctx ends. A target holds no goroutine between its polls:
// each poll runs on its own, started by the target's timer, so 1,000
// targets keep the stacks of the scrapes in flight (a scrape grows its stack
// to tens of KiB parsing), not a grown stack each.
func (p *Poller) Run(ctx context.Context) {
	p.mu.Lock()
	p.ctx = ctx
	for i := range p.targets {
		if p.used[i] {
			p.start(i)
		}
	}
	p.mu.Unlock()
	<-ctx.Done()
	p.mu.Lock()
	p.ctx = nil // Add starts nothing from here on
	runs := slices.Clone(p.runs)
	clear(p.runs)
	p.mu.Unlock()
	for _, r := range runs {
		if r != nil && r.timer.Stop() {
			r.finish() // its poll never starts
		}
	}
	p.wg.Wait()
}

// start sets target i's first poll; p.mu is held and p.ctx set.
func (p *Poller) start(i int) {
	t := p.targets[i]
	ctx, cancel := context.WithCancel(p.ctx)
	p.keys++
	r := &targetPoll{p: p, ctx: ctx, cancel: cancel, i: i, key: p.keys, t: t, seen: p.gen,
		norm: NewNormalizer(), st: FetchState{Plain: t.IsLoopback()}, sl: &slot{sem: p.sem}}
	r.norm.MaxSamples = p.cfg.MaxSamples
	r.sl.timer = time.AfterFunc(time.Hour, r.sl.release)
	r.sl.timer.Stop()
	p.box.open(i, r.key)
	p.runs[i] = r
	p.wg.Add(1)
	r.timer = time.AfterFunc(time.Hour, r.poll) // set before it can run: poll reads it
	r.timer.Stop()
	off := p.offset(t)
	r.due = time.Now().Add(off)
	r.timer.Reset(off)
}

// targetPoll is one target's state between its polls.
type targetPoll struct {
	p        *Poller
	ctx      context.Context // ends with Run's or when the target is removed
	cancel   context.CancelFunc
	i        int    // its mailbox index
	key      uint64 // its results' key in the mailbox
	t        Target
	norm     *Normalizer
	st       FetchState
	sl       *slot
	timer    *time.Timer // runs poll when the next one is due
	failures int
	seen     uint64    // PollNow requests seen
	due      time.Time // when the poll the timer runs next is due
}

// finish ends the target's polling once no poll of it runs or will start:
// its connection is closed and Run may return.
func (r *targetPoll) finish() {
	r.sl.timer.Stop()
	r.st.Close()
	r.cancel()
	r.p.wg.Done()
}

// poll scrapes the target once and sets its timer for the next poll. Polls
// of one target never overlap: only its timer starts one, and it is set
// again only at the end of a poll.
func (r *targetPoll) poll() {
	woke := time.Now()
	p, ctx := r.p, r.ctx
	if ctx.Err() != nil {
		r.finish()
		return
	}
	if gen := p.generation(); gen != r.seen {
		// "Poll now", while this target waited or was scraping.
		r.seen, r.failures = gen, 0
	}
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		r.finish()
		return
	}
	sl := r.sl
	sl.held.Store(true)
	// The share is taken now: the pool's targets come and go (discovery).
	sl.timer.Reset(p.fairShare())
	start, began := p.cfg.Clock(), time.Now()
	st := &r.st
	st.Buf = bodies.Get().(*bytes.Buffer)
	s := p.scrapeOnce(ctx, r.t, r.norm, st)
	sl.timer.Stop()
	sl.release()
	if st.Buf.Cap() <= SmallBody {
		// One huge or hostile body must not pin its buffer for good.
		bodies.Put(st.Buf)
	}
	st.Buf = nil
	p.fetch.Release(st)
	if ctx.Err() != nil {
		r.finish()
		return
	}
	s.Time = start
	s.Duration = time.Since(began)
	p.box.Put(r.i, r.key, s)
	next := p.cfg.Interval
	if s.Err != nil {
		r.failures++
		next = backoff(p.cfg.Interval, p.cfg.MaxBackoff, r.failures)
	} else {
		r.failures = 0
	}
	r.due = nextDue(r.due, woke, next)
	seen := r.seen
	r.timer.Reset(max(time.Until(r.due), 0)) // r belongs to the next poll from here on
	switch {
	case ctx.Err() != nil:
		// Run may have looked at the timer before it was set: the next
		// poll must not keep Run waiting for it.
		if r.timer.Stop() {
			r.finish()
		}
	case p.generation() != seen && r.timer.Stop():
		r.timer.Reset(0) // "poll now" came during this scrape
	}
}

// nextDue is when the poll after one due at due, that woke at woke, is
// due: wait (the interval, or a failing target's backoff) after the last
// one was due, not after it began or ended, so a slow target still polls
// once per interval (never twice at once) and the time a poll waits to
// start (its timer firing late on a busy machine, a slot of the
// semaphore) is not added to every interval. Counted from the start of
// the scrape, as before, 1,000 targets on a loaded machine lost that
// wait each poll: 80-95 % of their polls. A poll later than wait starts
// the count again from when it woke (no burst of polls to catch up); one
// woken before it was due ("poll now") counts from then.
func nextDue(due, woke time.Time, wait time.Duration) time.Time {
	if woke.Before(due) || woke.Sub(due) >= wait {
		due = woke
	}
	return due.Add(wait)
}

func (p *Poller) generation() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gen
}

// PollNow makes every target poll immediately, ending any backoff. A target
// busy with a scrape polls again as soon as that one ends.
func (p *Poller) PollNow() {
	p.mu.Lock()
	p.gen++
	runs := slices.Clone(p.runs)
	p.mu.Unlock()
	for _, r := range runs {
		if r != nil && r.timer.Stop() {
			r.timer.Reset(0)
		}
	}
}

// backoff doubles the wait after each consecutive failure beyond the second,
// up to max, so a restarting engine is seen back within seconds but a dead one
// costs little.
func backoff(interval, max time.Duration, failures int) time.Duration {
	if failures <= 2 {
		return interval
	}
	d := interval
	for i := 2; i < failures && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

func (p *Poller) scrapeOnce(ctx context.Context, t Target, n *Normalizer, st *FetchState) (s Scrape) {
	s = Scrape{Target: t.Name}
	// A bug that one hostile body triggers must cost that scrape, not the
	// process: a crash would leave the TUI's terminal in raw mode.
	defer func() {
		if r := recover(); r != nil {
			s = Scrape{Target: t.Name, Err: fmt.Errorf("internal error reading %s: %v", t.Name, r)}
			fresh := NewNormalizer() // its caches may be half-updated
			fresh.MaxSamples = n.MaxSamples
			*n = *fresh
		}
	}()
	body, ct, err := p.fetch.FetchInto(ctx, t.URL, st)
	if err != nil {
		s.Err = err
		return s
	}
	snap, err := n.Normalize(body, ct)
	if err != nil {
		if st.Redirect != "" {
			err = fmt.Errorf("%w (after a redirect to %s)", err, st.Redirect)
		}
		s.Err = err
		return s
	}
	if st.Redirect != "" {
		// Shown on the endpoint: the operator should point vtop at the
		// final address (credentials are not sent across origins).
		snap.Warnings = append(snap.Warnings, "redirected to "+st.Redirect)
	}
	s.Data = snap
	if p.cfg.KeepBody {
		s.KeepBody(n, body, ct)
	}
	return s
}

// Mailbox hands the newest result of each target to one consumer. A consumer
// that falls behind sees the latest scrape of each target, never a backlog.
type Mailbox struct {
	mu      sync.Mutex
	pending []Scrape
	has     []bool
	keys    []uint64 // the key of the run whose results index i takes; 0: none
	ready   chan struct{}
}

// NewMailbox makes a mailbox for n targets (it grows as targets are added).
func NewMailbox(n int) *Mailbox {
	return &Mailbox{pending: make([]Scrape, n), has: make([]bool, n), keys: make([]uint64, n), ready: make(chan struct{}, 1)}
}

// open makes index i take the results of the run with key.
func (m *Mailbox) open(i int, key uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.keys) <= i {
		m.pending, m.has, m.keys = append(m.pending, Scrape{}), append(m.has, false), append(m.keys, 0)
	}
	m.pending[i], m.has[i], m.keys[i] = Scrape{}, false, key
}

// close drops index i's result not yet taken, and any that comes later.
func (m *Mailbox) close(i int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i < len(m.keys) {
		m.pending[i], m.has[i], m.keys[i] = Scrape{}, false, 0
	}
}

// Put stores the result of target i's run with key, replacing one not yet
// taken (whose body changes s then carries, for a recording); a result
// of a run that is no longer index i's is dropped.
func (m *Mailbox) Put(i int, key uint64, s Scrape) {
	m.mu.Lock()
	if i >= len(m.keys) || m.keys[i] != key {
		m.mu.Unlock()
		return
	}
	if m.has[i] {
		s.absorb(&m.pending[i])
	}
	m.pending[i], m.has[i] = s, true
	m.mu.Unlock()
	select {
	case m.ready <- struct{}{}:
	default:
	}
}

// Ready is signalled after Put.
func (m *Mailbox) Ready() <-chan struct{} { return m.ready }

// Take appends every pending result (with its target index) to dst and clears them.
func (m *Mailbox) Take(dst []Indexed) []Indexed {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, ok := range m.has {
		if ok {
			dst = append(dst, Indexed{i, m.pending[i]})
			m.pending[i], m.has[i] = Scrape{}, false
		}
	}
	return dst
}

// Indexed is a result with the index of its target.
type Indexed struct {
	Index int
	Scrape
}
