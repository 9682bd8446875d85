package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/record"
	"github.com/vtop-dev/vtop/ui/report"
)

// pipeline is sources → diagnose for one run: the poller, its mailbox, and
// the engine fed from it.
type pipeline struct {
	poller   *sources.Poller
	engine   *diagnose.Engine
	detector *diagnose.Detector
	gpu      *gpuFeed // local GPUs; the demo may set a simulated source
	batch    []sources.Indexed
	log      *slog.Logger
	rec      *record.Writer // --record; nil when not recording
}

func newPipeline(o *options, logger *slog.Logger) (*pipeline, error) {
	fetcher, err := sources.NewFetcher(o.http)
	if err != nil {
		return nil, err
	}
	pc := sources.DefaultPollerConfig()
	pc.Interval, pc.MaxSamples = o.interval, o.maxSamples
	pc.KeepBody = o.record != ""
	if o.maxParallel > 0 {
		pc.MaxParallel = o.maxParallel
	}
	det, err := diagnose.NewDetector(o.rules)
	if err != nil {
		return nil, err
	}
	gpuSrc := o.gpuSource
	if gpuSrc == nil {
		if gpuSrc, err = openGPUSource(o); err != nil {
			return nil, err
		}
	}
	infos := make([]diagnose.TargetInfo, len(o.targets))
	for i, t := range o.targets {
		infos[i] = diagnose.TargetInfo{Name: t.Name, MaxNumSeqs: t.MaxNumSeqs}
	}
	gpu := newGPUFeed(gpuSrc, o.targets, o.interval)
	if o.procTrees != nil {
		gpu.useTrees(o.procTrees)
	}
	return &pipeline{
		poller:   sources.NewPoller(o.targets, fetcher, pc),
		engine:   diagnose.New(diagnose.Config{Window: o.window, Interval: o.interval}, infos),
		detector: det,
		gpu:      gpu,
		log:      logger,
	}, nil
}

// drain moves every pending scrape into the engine.
func (p *pipeline) drain() {
	p.batch = p.poller.Mailbox().Take(p.batch[:0])
	for _, s := range p.batch {
		if s.Err != nil {
			p.log.Debug("scrape failed", "target", s.Target, "err", s.Err)
		} else if len(s.Data.Warnings) > 0 {
			p.log.Debug("scrape warnings", "target", s.Target, "warnings", s.Data.Warnings)
		}
		// Recorded in the order ingested: a scrape the newest-wins
		// hand-off dropped was never seen by the detector either.
		if p.rec != nil {
			// A recording holds wall-clock times; the live run computes
			// rates from the same (no monotonic reading), so a replay
			// gets the same numbers to the last bit.
			s.Time = s.Time.Round(0)
			p.rec.Scrape(s.Index, s.Time, s.Duration, s.ContentType, s.Body, s.Err)
			s.Body = nil
		}
		p.engine.Ingest(s.Index, s.Scrape)
	}
}

// frame builds the picture at now. Everything the views and the report read
// is attached here: the engine's frame, then GPU data and findings.
func (p *pipeline) frame(now time.Time) *diagnose.Frame {
	if p.rec != nil {
		now = now.Round(0) // as in drain
		p.rec.Tick(now)
	}
	fr := p.engine.Frame(now)
	p.detector.Evaluate(fr)
	return fr
}

// runOnce polls for one window and prints the report. Interrupting it
// prints what was gathered so far.
func runOnce(ctx context.Context, o *options, stdout, stderr io.Writer, logger *slog.Logger) int {
	p, err := newPipeline(o, logger)
	if err != nil {
		fmt.Fprintf(stderr, "vtop: %v\n", err)
		return int(report.Unknown)
	}
	return collectAndReport(ctx, p, o, stdout, stderr)
}

func collectAndReport(ctx context.Context, p *pipeline, o *options, stdout, stderr io.Writer) int {
	// A report cannot wait longer than its one window: a condition that
	// held for half of it counts as held for the rule's for.
	p.detector.SetForCap(o.window / 2)
	if err := p.startRecording(o, o.window/2); err != nil {
		fmt.Fprintf(stderr, "vtop: %v\n", err)
		return int(report.Unknown)
	}
	defer p.stopRecording(stderr)
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		p.poller.Run(pctx)
		close(done)
	}()
	p.gpu.start(pctx, p.engine)
	// A window of data needs polls at both ends: wait the window plus half
	// an interval for the last one.
	deadline := time.NewTimer(o.window + o.interval/2)
	defer deadline.Stop()
	box := p.poller.Mailbox()
	var lastEval time.Time
loop:
	for {
		select {
		case <-box.Ready():
			p.drain()
			// Findings need their for durations: evaluate as data arrives,
			// about twice per interval however many targets report.
			if now := time.Now(); now.Sub(lastEval) >= o.interval/2 {
				p.frame(now)
				lastEval = now
			}
		case <-p.gpu.ready:
			p.gpu.drain(p.engine)
		case <-deadline.C:
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	cancel()
	<-done
	p.drain()
	if err := p.gpu.stop(); err != nil {
		p.log.Debug("gpu source close", "err", err)
	}
	p.gpu.drain(p.engine)
	fr := p.frame(time.Now())
	st := report.FrameStatus(fr)
	if o.output == "json" {
		err := report.WriteJSON(stdout, report.BuildJSON(fr, vtopVersion(), st))
		if err != nil {
			fmt.Fprintf(stderr, "vtop: %v\n", err)
		}
	} else if err := report.WriteText(stdout, fr, st); err != nil {
		fmt.Fprintf(stderr, "vtop: %v\n", err)
	}
	return int(st)
}
