package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/record"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/dcgm"
	"github.com/vtop-dev/vtop/sources/discovery"
	"github.com/vtop-dev/vtop/sources/hostproc"
	"github.com/vtop-dev/vtop/sources/promapi"
)

// pipeline is sources → diagnose for one run: the sources, and the engine
// and detector they feed. Its clock is the newest Batch.Now seen, so a
// replay or a backfill is judged at the times it recorded.
type pipeline struct {
	srcs      []sources.Source
	engine    *diagnose.Engine
	detector  *diagnose.Detector
	interval  time.Duration
	index     map[string]int // target name → engine index
	clock     time.Time
	first     time.Time // the first batch's time: the run's span is clock - first
	lastEval  time.Time
	evals     int             // frames built and evaluated
	latest    *diagnose.Frame // the newest evaluated frame
	log       *slog.Logger
	scrapeLog *scrapeLog      // scrape errors and warnings, rate-limited
	scrapes   int             // scrape results applied
	answered  int             // of which succeeded (vLLM metrics read)
	rec       *record.Writer  // --record; nil when not recording
	prom      *promapi.Client // with --prometheus, for its request counts
}

// newPipeline wires the sources of o: the poller over its targets and the
// GPUs of this machine.
func newPipeline(o *options, logger *slog.Logger) (*pipeline, error) {
	fetcher, err := sources.NewFetcher(o.http)
	if err != nil {
		return nil, err
	}
	if o.prom.url != "" {
		return newPromPipeline(o, fetcher, logger)
	}
	pc := sources.DefaultPollerConfig()
	pc.Interval, pc.MaxSamples = o.interval, o.maxSamples
	pc.KeepBody = o.record != ""
	if o.maxParallel > 0 {
		pc.MaxParallel = o.maxParallel
	}
	var poll sources.Source = sources.NewPollSource(sources.NewPoller(o.targets, fetcher, pc))
	if len(o.discover) > 0 {
		// Targets that come and go: each found one gets its own poller.
		poll = &discovery.Source{Specs: o.discover, Static: o.targets, Resolver: o.http.Resolver, Fetcher: fetcher, Poll: pc,
			OnError: func(sp discovery.Spec, err error) { logger.Warn("discovery", "rule", sp.String(), "err", err) }}
	}
	if len(o.dcgm) > 0 {
		// Remote GPUs: dcgm-exporter instead of this machine's NVML.
		d := &dcgm.Scraper{URLs: o.dcgm, Fetcher: fetcher, Interval: o.interval, Targets: o.targets}
		return newPipelineOf(o, logger, poll, d)
	}
	gpuSrc := o.gpuSource
	if gpuSrc == nil {
		if gpuSrc, err = openGPUSource(o); err != nil {
			return nil, err
		}
	}
	gpu := hostproc.NewGPUFeed(gpuSrc, o.targets, o.interval, "/proc")
	if o.procTrees != nil {
		var trees []sources.TargetProcs
		for i, t := range o.procTrees {
			trees = append(trees, sources.TargetProcs{Target: o.targets[i].Name, Tree: t})
		}
		gpu.UseTrees(trees)
	}
	return newPipelineOf(o, logger, poll, gpu)
}

// newPromPipeline reads the fleet from a Prometheus-compatible server: its
// scrape interval becomes the poll interval, and the window covers at
// least four of its scrapes.
func newPromPipeline(o *options, fetcher *sources.Fetcher, logger *slog.Logger) (*pipeline, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*promQueryTimeout)
	defer cancel()
	cfg := promapi.Config{URL: o.prom.url, Selector: o.prom.selector, Headers: o.prom.headers,
		Fetcher: fetcher, Timeout: promQueryTimeout, Backfill: o.prom.backfill, Once: o.once, Log: logger,
		KeepBody: o.record != ""}
	// Every scrape for the window and the longest hold; a coarser step
	// before that (the leak fit and sparklines need no more).
	if det, err := diagnose.NewDetector(o.rules); err == nil {
		var hold time.Duration
		for _, r := range det.Rules() {
			hold = max(hold, r.For)
		}
		cfg.FullRes = o.window + hold + time.Minute
	}
	if at := o.prom.at; !at.IsZero() {
		cfg.Clock = func() time.Time { return at } // --once --at: the server's history up to then
	}
	c, err := promapi.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	o.interval = c.Interval()
	o.window = max(o.window, 4*o.interval)
	logger.Debug("prometheus", "server", c.Server(), "interval", o.interval, "federate", c.Federates())
	p, err := newPipelineOf(o, logger, promapi.NewSource(c))
	if p != nil {
		p.prom = c
	}
	return p, err
}

// promQueryTimeout bounds one query to the server.
const promQueryTimeout = 15 * time.Second

// newPipelineOf builds the pipeline over any sources; o's targets are known
// up front, so they keep their order whatever source names them first.
func newPipelineOf(o *options, logger *slog.Logger, srcs ...sources.Source) (*pipeline, error) {
	det, err := diagnose.NewDetector(o.rules)
	if err != nil {
		return nil, err
	}
	p := &pipeline{
		srcs:      srcs,
		engine:    diagnose.New(diagnose.Config{Window: o.window, Interval: o.interval}, nil),
		detector:  det,
		interval:  o.interval,
		index:     map[string]int{},
		log:       logger,
		scrapeLog: newScrapeLog(logger, time.Now),
	}
	for _, t := range o.targets {
		p.add(t)
	}
	return p, nil
}

func (p *pipeline) add(t sources.Target) int {
	if i, ok := p.index[t.Name]; ok {
		return i
	}
	i := p.engine.AddTarget(diagnose.TargetInfo{Name: t.Name, MaxNumSeqs: t.MaxNumSeqs, Pool: t.Pool})
	p.index[t.Name] = i
	return i
}

// join adds a target that arrived: one found after the run's first two
// intervals (the fleet as opened) is shown as having joined.
func (p *pipeline) join(t sources.Target, now time.Time) {
	if _, ok := p.index[t.Name]; ok || p.first.IsZero() || now.Sub(p.first) <= 2*p.interval {
		p.add(t)
		return
	}
	p.log.Debug("target joined", "target", t.Name)
	p.index[t.Name] = p.engine.JoinTarget(diagnose.TargetInfo{Name: t.Name, MaxNumSeqs: t.MaxNumSeqs, Pool: t.Pool}, now)
}

// remove forgets a departed target (its last view stays in the frames'
// roster for a while); those after it move down one index.
func (p *pipeline) remove(name string, now time.Time) {
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

// apply moves one batch into the engine and advances the clock. With
// --record, what it ingests is recorded in the same order.
func (p *pipeline) apply(b *sources.Batch) {
	if p.rec != nil {
		p.wallClock(b)
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
	if b.GPU != nil {
		p.rec.GPU(b.GPU)
		p.engine.IngestGPU(*b.GPU)
	}
	if b.Now.After(p.clock) {
		p.clock = b.Now
	}
	if p.first.IsZero() {
		p.first = b.Now
	}
}

// frame builds the picture at the pipeline's clock: the engine's frame with
// the findings attached.
func (p *pipeline) frame() *diagnose.Frame {
	p.rec.Tick(p.clock)
	fr := p.engine.Frame(p.clock)
	p.detector.Evaluate(fr)
	p.lastEval, p.latest = p.clock, fr
	p.evals++
	return fr
}

// loopConfig says what one run of the event loop does besides feeding the
// engine.
type loopConfig struct {
	publish func(*diagnose.Frame) // the TUI's frames, every tick; nil for --once
	tick    time.Duration         // wall-clock period of publish
	cmds    <-chan hubCmd         // the UI's requests; nil for --once
	stop    func() bool           // asked after every batch: true ends the loop (--once: nothing answers)
}

// serve is the one event loop of the TUI and of --once: it runs every
// source, applies their batches and evaluates the rules whenever the
// clock moved an interval (so findings' for durations count in data time,
// however fast a replay goes), until ctx ends or every source is done. It
// returns the sources' start errors.
func (p *pipeline) serve(ctx context.Context, lc loopConfig) error {
	ctx, cancel := context.WithCancel(ctx)
	in := make(chan sources.Batch, len(p.srcs))
	errc := make(chan error, len(p.srcs))
	for _, s := range p.srcs {
		go func(s sources.Source) { errc <- s.Run(ctx, in) }(s)
	}
	var errs []error
	running := len(p.srcs)
	var tick <-chan time.Time
	if lc.publish != nil {
		t := time.NewTicker(lc.tick)
		defer t.Stop()
		tick = t.C
	}
	publish := func() {
		if lc.publish != nil && !p.clock.IsZero() {
			lc.publish(p.frame())
		}
	}
	// Findings need their for durations: evaluate as the clock moves, once
	// per interval however many targets report (a rule's for duration is
	// whole intervals; a second evaluation in between was a fifth of a
	// busy fleet's CPU and changed nothing shown, BENCHMARKS.md issue 23).
	// The TUI's publish tick evaluates each interval itself; the data clock
	// then only evaluates when the ticks fall behind it.
	evalEvery := p.interval
	if lc.publish != nil {
		evalEvery += p.interval / 2
	}
loop:
	for running > 0 {
		select {
		case <-ctx.Done():
			break loop
		case b := <-in:
			p.apply(&b)
			if p.clock.Sub(p.lastEval) >= evalEvery {
				p.frame()
			}
			if lc.stop != nil && lc.stop() {
				break loop
			}
		case err := <-errc:
			running--
			if err != nil {
				errs = append(errs, err)
			}
		case c := <-lc.cmds:
			if c.window > 0 {
				p.engine.SetWindow(c.window)
				publish()
			}
			if c.pollNow {
				for _, s := range p.srcs {
					if pn, ok := s.(sources.PollNower); ok {
						pn.PollNow()
					}
				}
			}
			if c.slo != nil {
				p.detector.SetSLO(*c.slo)
				publish()
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
			p.apply(&b)
		default:
			publish()
			return errors.Join(errs...)
		}
	}
}

// wallClock drops the monotonic clock readings of a batch being recorded:
// a recording holds wall-clock times, and the live run computes its rates
// from the same, so a replay gets the same numbers to the last bit.
func (p *pipeline) wallClock(b *sources.Batch) {
	b.Now = b.Now.Round(0)
	for i := range b.Scrapes {
		b.Scrapes[i].Time = b.Scrapes[i].Time.Round(0)
	}
	if b.GPU != nil {
		g := *b.GPU
		g.Time = g.Time.Round(0)
		b.GPU = &g
	}
}
