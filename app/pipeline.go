package app

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/diagnose/detect"
	"github.com/vtop-dev/vtop/record"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/dcgm"
	"github.com/vtop-dev/vtop/sources/discovery"
	"github.com/vtop-dev/vtop/sources/hostproc"
	"github.com/vtop-dev/vtop/sources/promapi"
)

// Pipeline is sources → diagnose for one run: the sources, and the engine
// and detector they feed. Its clock is the newest Batch.Now seen, so a
// replay or a backfill is judged at the times it recorded.
type Pipeline struct {
	srcs      []sources.Source
	engine    *diagnose.Engine
	detector  *detect.Detector
	interval  time.Duration
	index     map[string]int // target name → engine index
	clock     time.Time
	first     time.Time // the first batch's time: the run's span is clock - first
	lastEval  time.Time
	evals     int             // frames built and evaluated
	latest    *diagnose.Frame // the newest frame evaluated with its findings listed
	readAll   bool            // every evaluation lists its findings (ReadEveryEvaluation)
	log       *slog.Logger
	scrapeLog *scrapeLog         // scrape errors and warnings, rate-limited
	scrapes   int                // scrape results applied
	answered  int                // of which succeeded (vLLM metrics read)
	rec       *record.Writer     // --record; nil when not recording
	prom      *promapi.Client    // with --prometheus, for its request counts
	problems  map[string]problem // what the sources say about themselves, by key (Batch.Problems)
}

// New wires the sources of c: the poller over its targets and the GPUs of
// this machine (or dcgm-exporter's, or Prometheus' view of the fleet).
// Reading from Prometheus, c.Interval and c.Window become the server's.
func New(c *Config, logger *slog.Logger) (*Pipeline, error) {
	fetcher, err := sources.NewFetcher(c.HTTP)
	if err != nil {
		return nil, err
	}
	if c.Prom.URL != "" {
		return newProm(c, fetcher, logger)
	}
	pc := sources.DefaultPollerConfig()
	pc.Interval, pc.MaxSamples = c.Interval, c.MaxSamples
	pc.KeepBody = c.Record != ""
	if c.MaxParallel > 0 {
		pc.MaxParallel = c.MaxParallel
	}
	var poll sources.Source = sources.NewPollSource(sources.NewPoller(c.Targets, fetcher, pc))
	var found *sources.TargetList // the targets polled, for dcgm's join
	if len(c.Discover) > 0 && len(c.DCGM) > 0 {
		found = &sources.TargetList{}
		found.Set(c.Targets)
	}
	if len(c.Discover) > 0 {
		// Targets that come and go, on one poller with the static ones.
		poll = &discovery.Source{Specs: c.Discover, Static: c.Targets, Resolver: c.HTTP.Resolver, Fetcher: fetcher, Poll: pc, Found: found,
			OnError: func(sp discovery.Spec, err error) { logger.Warn("discovery", "rule", sp.String(), "err", err) }}
	}
	if len(c.DCGM) > 0 {
		// Remote GPUs: dcgm-exporter instead of this machine's NVML,
		// joined to the targets named and found.
		d := &dcgm.Scraper{URLs: c.DCGM, Fetcher: fetcher, Interval: c.Interval, Targets: c.Targets, Found: found}
		return NewOf(c, logger, poll, d)
	}
	gpuSrc := c.GPUSource
	if gpuSrc == nil {
		if gpuSrc, err = openGPUSource(c); err != nil {
			return nil, err
		}
	}
	gpu := hostproc.NewGPUFeed(gpuSrc, c.Targets, c.Interval, "/proc")
	if c.ProcTrees != nil {
		var trees []sources.TargetProcs
		for i, t := range c.ProcTrees {
			trees = append(trees, sources.TargetProcs{Target: c.Targets[i].Name, Tree: t})
		}
		gpu.UseTrees(trees)
	}
	return NewOf(c, logger, poll, gpu)
}

// newProm reads the fleet from a Prometheus-compatible server: its
// scrape interval becomes the poll interval, and the window covers at
// least four of its scrapes.
func newProm(c *Config, fetcher *sources.Fetcher, logger *slog.Logger) (*Pipeline, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*promQueryTimeout)
	defer cancel()
	cfg := promapi.Config{URL: c.Prom.URL, Selector: c.Prom.Selector, Headers: c.Prom.Headers,
		Fetcher: fetcher, Timeout: promQueryTimeout, Backfill: c.Prom.Backfill, Once: c.Once, Log: logger,
		KeepBody: c.Record != ""}
	// Every scrape for the window and the longest hold; a coarser step
	// before that (the leak fit and sparklines need no more).
	if det, err := detect.NewDetector(c.Rules); err == nil {
		var hold time.Duration
		for _, r := range det.Rules() {
			hold = max(hold, r.For)
		}
		cfg.FullRes = c.Window + hold + time.Minute
		cfg.Warm = diagnose.ShiftWarm
	}
	if at := c.Prom.At; !at.IsZero() {
		cfg.Clock = func() time.Time { return at } // --once --at: the server's history up to then
	}
	cl, err := openProm(ctx, cfg)
	if err != nil && (c.Once || usageErr(err)) {
		return nil, err
	}
	if err != nil {
		// Live: open anyway and keep trying; the header says the server
		// fails, as it does when it stops answering later.
		r := &promRetry{cfg: cfg, key: "Prometheus " + mustParse(c.Prom.URL).Host, first: err, log: logger,
			every: max(c.Interval, 2*time.Second)}
		return NewOf(c, logger, r)
	}
	c.Interval = cl.Interval()
	c.Window = max(c.Window, 4*c.Interval)
	logger.Debug("prometheus", "server", cl.Server(), "interval", c.Interval, "federate", cl.Federates())
	p, err := NewOf(c, logger, promapi.NewSource(cl))
	if p != nil {
		p.prom = cl
	}
	return p, err
}

// promQueryTimeout bounds one query to the server.
const promQueryTimeout = 15 * time.Second

// NewOf builds the pipeline over any sources; c's targets are known up
// front, so they keep their order whatever source names them first.
func NewOf(c *Config, logger *slog.Logger, srcs ...sources.Source) (*Pipeline, error) {
	det, err := detect.NewDetector(c.Rules)
	if err != nil {
		return nil, err
	}
	p := &Pipeline{
		srcs:      srcs,
		engine:    diagnose.New(diagnose.Config{Window: c.Window, Interval: c.Interval}, nil),
		detector:  det,
		interval:  c.Interval,
		index:     map[string]int{},
		log:       logger,
		scrapeLog: newScrapeLog(logger, time.Now),
	}
	for _, t := range c.Targets {
		p.add(t)
	}
	return p, nil
}

func (p *Pipeline) add(t sources.Target) int {
	if i, ok := p.index[t.Name]; ok {
		return i
	}
	i := p.engine.AddTarget(targetInfo(t))
	p.index[t.Name] = i
	return i
}

func targetInfo(t sources.Target) diagnose.TargetInfo {
	return diagnose.TargetInfo{Name: t.Name, MaxNumSeqs: t.MaxNumSeqs, Pool: t.Pool, Pod: t.Pod, Namespace: t.Namespace}
}

// join adds a target that arrived: one found after the run's first two
// intervals (the fleet as opened) is shown as having joined.
func (p *Pipeline) join(t sources.Target, now time.Time) {
	if _, ok := p.index[t.Name]; ok || p.first.IsZero() || now.Sub(p.first) <= 2*p.interval {
		p.add(t)
		return
	}
	p.log.Debug("target joined", "target", t.Name)
	p.index[t.Name] = p.engine.JoinTarget(targetInfo(t))
}

// remove forgets a departed target (its last view stays in the frames'
// roster for a while); those after it move down one index.
func (p *Pipeline) remove(name string, now time.Time) {
	i, ok := p.index[name]
	if !ok {
		return
	}
	p.log.Debug("target departed", "target", name)
	p.engine.LeaveTarget(i, now)
	delete(p.index, name)
	for n, j := range p.index {
		if j > i {
			p.index[n] = j - 1
		}
	}
}

// Apply moves one batch into the engine and advances the clock. With
// --record, what it ingests is recorded in the same order.
func (p *Pipeline) Apply(b *sources.Batch) {
	if p.rec != nil {
		p.wallClock(b)
	}
	for _, pr := range b.Problems {
		since := pr.At
		if since.IsZero() {
			since = b.Now
		}
		p.rec.Problem(since, pr)
		if p.problems == nil {
			p.problems = map[string]problem{}
		}
		old, had := p.problems[pr.Key]
		fails := pr.Fails || pr.Feeds
		switch {
		case pr.Text == "":
			delete(p.problems, pr.Key)
			if had && old.fails {
				p.log.Info("source answers again", "source", pr.Key)
			}
		case had:
			if fails && !old.fails {
				old.since = since // failing from now, not from an earlier warning
			}
			old.text, old.feeds, old.fails = pr.Text, pr.Feeds, fails
			p.problems[pr.Key] = old // since the first report
		default:
			p.problems[pr.Key] = problem{text: pr.Text, feeds: pr.Feeds, fails: fails, since: since}
			if fails {
				p.log.Warn("source fails", "source", pr.Key, "err", pr.Text)
			}
		}
	}
	for _, n := range b.Departed {
		p.rec.Departed(n)
		p.remove(n, b.Now)
	}
	for _, t := range b.Arrived {
		p.rec.Target(t)
		p.join(t, b.Now)
	}
	for _, s := range b.Scrapes {
		p.scrapes++
		if s.Err == nil {
			p.answered++
		}
		p.scrapeLog.note(s)
		p.rec.Scrape(&s)
		s.Body, s.Lines = nil, nil
		p.engine.Ingest(p.add(sources.Target{Name: s.Target}), s)
	}
	for _, t := range b.Procs {
		p.rec.Procs(t.Target, t.Tree)
		p.engine.SetEndpointProcs(p.add(sources.Target{Name: t.Target}), t.Tree)
	}
	for i := range b.EarlierGPU {
		p.rec.GPU(&b.EarlierGPU[i])
		p.engine.IngestGPU(b.EarlierGPU[i])
	}
	if b.GPU != nil {
		p.rec.GPU(b.GPU)
		p.engine.IngestGPU(*b.GPU)
	}
	if b.Interval > 0 && b.Interval != p.interval {
		p.interval = b.Interval
		p.engine.SetInterval(b.Interval)
		// The window covers at least four of the server's scrapes.
		p.engine.SetWindow(max(p.engine.Config().Window, 4*b.Interval))
	}
	if b.Now.After(p.clock) {
		p.clock = b.Now
	}
	if p.first.IsZero() && (len(b.Scrapes) > 0 || len(b.Arrived) > 0 || b.GPU != nil) {
		// The run starts with its first data: a server that answers
		// only later opens the fleet then, nobody "joined" it.
		p.first = b.Now
	}
}

// frame builds the picture at the pipeline's clock: the engine's frame with
// the findings attached.
func (p *Pipeline) frame() *diagnose.Frame { return p.evaluate(true) }

// evaluate builds the frame at the pipeline's clock and moves the rules'
// states by it; with shown false (an evaluation for the rules' for
// durations only, whose frame is dropped) the findings are not listed on
// it, unless every evaluation is read (ReadEveryEvaluation).
func (p *Pipeline) evaluate(shown bool) *diagnose.Frame {
	p.rec.Tick(p.clock)
	fr := p.engine.Frame(p.clock)
	for key, pr := range p.problems {
		fr.Problems = append(fr.Problems, sources.Sanitize(key, 80)+": "+pr.text)
		o := diagnose.Outage{Source: sources.Sanitize(key, 80), Err: pr.text, Since: pr.since}
		switch {
		case pr.feeds:
			fr.Outages = append(fr.Outages, o)
		case pr.fails:
			fr.Failing = append(fr.Failing, o)
		}
	}
	slices.Sort(fr.Problems)
	bySource := func(a, b diagnose.Outage) int { return strings.Compare(a.Source, b.Source) }
	slices.SortFunc(fr.Outages, bySource)
	slices.SortFunc(fr.Failing, bySource)
	if len(fr.Outages) > 0 {
		// Every endpoint's data comes through the failing source.
		for i := range fr.Endpoints {
			fr.Endpoints[i].Blind = true
		}
	}
	if shown || p.readAll {
		p.detector.Evaluate(fr)
		p.latest = fr
	} else {
		p.detector.Advance(fr)
	}
	p.lastEval = p.clock
	p.evals++
	return fr
}

// problem is what a source said about itself, and since when.
type problem struct {
	text  string
	feeds bool // the source feeds the endpoints (sources.Problem.Feeds)
	fails bool // the source fails (sources.Problem.Fails, or feeds)
	since time.Time
}

// LoopConfig says what one run of the event loop does besides feeding the
// engine.
type LoopConfig struct {
	Publish func(*diagnose.Frame) // the TUI's frames, every tick; nil for --once
	Tick    time.Duration         // wall-clock period of Publish
	Stop    func() bool           // asked after every batch: true ends the loop (--once: nothing answers)
	hub     *Hub                  // the UI's requests; nil for --once
}

// Serve is the one event loop of the TUI and of --once: it runs every
// source, applies their batches and evaluates the rules whenever the
// clock moved an interval (so findings' for durations count in data time,
// however fast a replay goes), until ctx ends or every source is done. It
// returns the sources' start errors.
func (p *Pipeline) Serve(ctx context.Context, lc LoopConfig) error {
	ctx, cancel := context.WithCancel(ctx)
	in := make(chan sources.Batch, len(p.srcs))
	errc := make(chan error, len(p.srcs))
	for _, s := range p.srcs {
		go func(s sources.Source) { errc <- s.Run(ctx, in) }(s)
	}
	var errs []error
	running := len(p.srcs)
	var tick <-chan time.Time
	var wake <-chan struct{}
	if lc.hub != nil {
		wake = lc.hub.wake
	}
	if lc.Publish != nil {
		t := time.NewTicker(lc.Tick)
		defer t.Stop()
		tick = t.C
	}
	publish := func() {
		if lc.Publish != nil && !p.clock.IsZero() {
			lc.Publish(p.frame())
		}
	}
	// Findings need their for durations: evaluate as the clock moves, once
	// per interval however many targets report (a rule's for duration is
	// whole intervals; a second evaluation in between was a fifth of a
	// busy fleet's CPU and changed nothing shown, BENCHMARKS.md issue 23).
	// The TUI's publish tick evaluates each interval itself; the data clock
	// then only evaluates when the ticks fall behind it.
	evalEvery := p.interval
	if lc.Publish != nil {
		evalEvery += p.interval / 2
	}
loop:
	for running > 0 {
		select {
		case <-ctx.Done():
			break loop
		case b := <-in:
			first := p.scrapes == 0
			p.Apply(&b)
			if first && p.scrapes > 0 {
				// The first data is shown as it arrives, not a tick later:
				// with --prometheus the tick is the server's scrape
				// interval, minutes on some.
				publish()
			}
			if p.clock.Sub(p.lastEval) >= evalEvery {
				p.evaluate(false)
			}
			if lc.Stop != nil && lc.Stop() {
				break loop
			}
		case err := <-errc:
			running--
			if err != nil {
				errs = append(errs, err)
			}
		case <-wake:
			r := lc.hub.take()
			if r.window > 0 {
				p.engine.SetWindow(r.window)
			}
			if r.slo != nil {
				p.detector.SetSLO(*r.slo)
			}
			if r.pollNow {
				for _, s := range p.srcs {
					if pn, ok := s.(sources.PollNower); ok {
						pn.PollNow()
					}
				}
			}
			if r.window > 0 || r.slo != nil {
				publish() // the next frame shows the new setting: no a→b left on screen
			}
		case <-tick:
			publish()
		}
	}
	// Sources send with ctx: once it ends they return without blocking.
	// What they sent last may still be buffered.
	cancel()
	for ; running > 0; running-- {
		if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	for {
		select {
		case b := <-in:
			p.Apply(&b)
		default:
			publish()
			return errors.Join(errs...)
		}
	}
}

// wallClock drops the monotonic clock readings of a batch being recorded:
// a recording holds wall-clock times, and the live run computes its rates
// from the same, so a replay gets the same numbers to the last bit.
func (p *Pipeline) wallClock(b *sources.Batch) {
	b.Now = b.Now.Round(0)
	for i := range b.Scrapes {
		b.Scrapes[i].Time = b.Scrapes[i].Time.Round(0)
	}
	if b.GPU != nil {
		g := *b.GPU
		g.Time = g.Time.Round(0)
		b.GPU = &g
	}
	for i := range b.EarlierGPU {
		b.EarlierGPU[i].Time = b.EarlierGPU[i].Time.Round(0)
	}
}

// Frame evaluates the rules at the pipeline's clock: the picture a report
// prints.
func (p *Pipeline) Frame() *diagnose.Frame { return p.frame() }

// SetForCap caps the rules' for durations (a --once run cannot wait
// longer than its one window).
func (p *Pipeline) SetForCap(d time.Duration) { p.detector.SetForCap(d) }

// Scrapes counts the scrape results applied, and of those the ones that
// read vLLM metrics.
func (p *Pipeline) Scrapes() (applied, answered int) { return p.scrapes, p.answered }

// Span is the data time the run covered: from the first batch to the
// clock; false before the first batch.
func (p *Pipeline) Span() (time.Duration, bool) {
	if p.first.IsZero() {
		return 0, false
	}
	return p.clock.Sub(p.first), true
}

// RecordRun writes a --once run's record (how it ended) to the recording,
// when recording.
func (p *Pipeline) RecordRun(b []byte) {
	if p.rec != nil {
		p.rec.Run(b)
	}
}

// LogPromStats logs what reading from Prometheus cost, with --prometheus.
func (p *Pipeline) LogPromStats(endpoints int, wall time.Duration) {
	if p.prom == nil {
		return
	}
	q, b := p.prom.Stats()
	p.log.Info("prometheus requests", "server", p.prom.Server(), "queries", q, "bytes", b,
		"endpoints", endpoints, "read_seconds", wall.Seconds())
}

// Log is the pipeline's logger (--log).
func (p *Pipeline) Log() *slog.Logger { return p.log }

// Latest is the newest frame evaluated with its findings listed; nil before
// the first.
func (p *Pipeline) Latest() *diagnose.Frame { return p.latest }

// ReadEveryEvaluation has every evaluation list its findings on its frame
// (Latest), for a caller that reads them all, not only the frames served.
func (p *Pipeline) ReadEveryEvaluation() { p.readAll = true }
