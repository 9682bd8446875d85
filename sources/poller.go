package sources

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
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
	// Slots is the pool of scrape slots the poller draws from; pollers
	// that share one (a run's static and discovered targets) share
	// MaxParallel, the fair share and the start offsets. nil: its own.
	Slots *Slots
}

// Slots is a run's scrape-slot pool: at most its size scrapes hold a slot
// at once, across every poller drawing from it, and each one's fair share
// of a slot is computed over all their targets.
type Slots struct {
	sem     chan struct{}
	targets atomic.Int64 // targets of the pollers running on it
}

// NewSlots makes a pool of n slots (64 when n <= 0).
func NewSlots(n int) *Slots {
	if n <= 0 {
		n = 64
	}
	return &Slots{sem: make(chan struct{}, n)}
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
// them (see fairShare).
type Poller struct {
	cfg     PollerConfig
	targets []Target
	fetch   *Fetcher
	box     *Mailbox
	sem     chan struct{}

	mu   sync.Mutex
	gen  uint64        // PollNow requests so far; a target mid-scrape catches up on it
	runs []*targetPoll // while Run runs
}

// NewPoller builds a poller; results arrive in the returned Mailbox, indexed
// like targets.
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
	if cfg.Slots == nil {
		cfg.Slots = NewSlots(cfg.MaxParallel)
	}
	return &Poller{cfg: cfg, targets: targets, fetch: f, box: NewMailbox(len(targets)), sem: cfg.Slots.sem}
}

// Mailbox returns where results arrive.
func (p *Poller) Mailbox() *Mailbox { return p.box }

// Targets returns the polled targets.
func (p *Poller) Targets() []Target { return p.targets }

// offset spreads the targets' first polls so a large fleet does not poll in
// one burst; it is stable per target URL, and at most a second, so a long
// --interval still shows numbers at once.
func (p *Poller) offset(i int) time.Duration {
	if p.cfg.Slots.targets.Load() <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(p.targets[i].URL))
	return time.Duration(uint64(h.Sum32()) % uint64(min(p.cfg.Interval, time.Second)))
}

// fairShare is how long one scrape may hold a shared slot: the slot time of
// one interval divided among the targets. A scrape still running then (a hung
// or slow-dripping target) gives its slot back and finishes outside the bound,
// so 700 hung targets cannot keep a healthy one waiting for its turn; the
// timeout still ends it. A hung scrape costs a socket, not CPU.
func (p *Poller) fairShare() time.Duration {
	n := max(p.cfg.Slots.targets.Load(), 1)
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
	var wg sync.WaitGroup // one per target whose poll is pending or running
	p.cfg.Slots.targets.Add(int64(len(p.targets)))
	defer p.cfg.Slots.targets.Add(-int64(len(p.targets)))
	runs := make([]*targetPoll, len(p.targets))
	p.mu.Lock()
	for i := range p.targets {
		r := &targetPoll{p: p, ctx: ctx, wg: &wg, i: i, seen: p.gen,
			norm: NewNormalizer(), st: FetchState{Plain: p.targets[i].IsLoopback()}, sl: &slot{sem: p.sem}}
		r.norm.MaxSamples = p.cfg.MaxSamples
		r.sl.timer = time.AfterFunc(time.Hour, r.sl.release)
		r.sl.timer.Stop()
		runs[i] = r
		r.timer = time.AfterFunc(time.Hour, r.poll) // set before it can run: poll reads it
		r.timer.Stop()
		wg.Add(1)
		r.timer.Reset(p.offset(i))
	}
	p.runs = runs
	p.mu.Unlock()
	<-ctx.Done()
	p.mu.Lock()
	p.runs = nil
	p.mu.Unlock()
	for _, r := range runs {
		if r.timer.Stop() {
			wg.Done() // its poll never starts
		}
	}
	wg.Wait()
	for _, r := range runs {
		r.sl.timer.Stop()
		r.st.Close()
	}
}

// targetPoll is one target's state between its polls.
type targetPoll struct {
	p        *Poller
	ctx      context.Context
	wg       *sync.WaitGroup
	i        int
	norm     *Normalizer
	st       FetchState
	sl       *slot
	timer    *time.Timer // runs poll when the next one is due
	failures int
	seen     uint64 // PollNow requests seen
}

// poll scrapes the target once and sets its timer for the next poll. Polls
// of one target never overlap: only its timer starts one, and it is set
// again only at the end of a poll.
func (r *targetPoll) poll() {
	p, ctx := r.p, r.ctx
	if ctx.Err() != nil {
		r.wg.Done()
		return
	}
	if gen := p.generation(); gen != r.seen {
		// "Poll now", while this target waited or was scraping.
		r.seen, r.failures = gen, 0
	}
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		r.wg.Done()
		return
	}
	sl := r.sl
	sl.held.Store(true)
	// The share is taken now: the pool's targets come and go (discovery).
	sl.timer.Reset(p.fairShare())
	start, began := p.cfg.Clock(), time.Now()
	st := &r.st
	st.Buf = bodies.Get().(*bytes.Buffer)
	t := p.targets[r.i]
	s := p.scrapeOnce(ctx, t, r.norm, st)
	sl.timer.Stop()
	sl.release()
	if st.Buf.Cap() <= SmallBody {
		// One huge or hostile body must not pin its buffer for good.
		bodies.Put(st.Buf)
	}
	st.Buf = nil
	p.fetch.Release(st)
	if ctx.Err() != nil {
		r.wg.Done()
		return
	}
	s.Time = start
	s.Duration = time.Since(began)
	p.box.Put(r.i, s)
	next := p.cfg.Interval
	if s.Err != nil {
		r.failures++
		next = backoff(p.cfg.Interval, p.cfg.MaxBackoff, r.failures)
	} else {
		r.failures = 0
	}
	// The schedule counts from the start of the poll, so a slow target
	// still polls once per interval (never twice at once).
	next = max(next-s.Duration, 0)
	seen := r.seen
	r.timer.Reset(next) // r belongs to the next poll from here on
	switch {
	case ctx.Err() != nil:
		// Run may have looked at the timer before it was set: the next
		// poll must not keep Run waiting for it.
		if r.timer.Stop() {
			r.wg.Done()
		}
	case p.generation() != seen && r.timer.Stop():
		r.timer.Reset(0) // "poll now" came during this scrape
	}
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
	runs := p.runs
	p.mu.Unlock()
	for _, r := range runs {
		if r.timer.Stop() {
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
	ready   chan struct{}
}

// NewMailbox makes a mailbox for n targets.
func NewMailbox(n int) *Mailbox {
	return &Mailbox{pending: make([]Scrape, n), has: make([]bool, n), ready: make(chan struct{}, 1)}
}

// Put stores the result of target i, replacing one not yet taken (whose
// body changes s then carries, for a recording).
func (m *Mailbox) Put(i int, s Scrape) {
	m.mu.Lock()
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
