package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/vtop-dev/vtop/ui/report"
)

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
	// With history from a server (--prometheus) the rules have theirs.
	var forCap time.Duration
	if o.prom.url == "" {
		forCap = o.window / 2
		p.detector.SetForCap(forCap)
	}
	if err := p.startRecording(o, forCap); err != nil {
		fmt.Fprintf(stderr, "vtop: %v\n", err)
		return int(report.Unknown)
	}
	defer p.stopRecording(stderr)
	// A window of data needs polls at both ends: wait the window plus half
	// an interval for the last one. A source that is done sooner (a
	// backfill, a replay) ends the wait; so does every target failing its
	// first polls: waiting the window out would only delay the same answer.
	wctx, cancel := context.WithTimeout(ctx, o.window+o.interval/2)
	defer cancel()
	start := time.Now()
	run := report.Run{Window: o.window}
	lc := loopConfig{stop: func() bool {
		n := len(o.targets)
		run.NoAnswer = n > 0 && p.answered == 0 && p.scrapes >= report.NoAnswerPolls*n
		return run.NoAnswer
	}}
	if err := p.serve(wctx, lc); err != nil {
		p.log.Debug("sources", "err", err)
	}
	// Data time, as the detector counts it: a replay reports the span it
	// replayed, the same as the live run it recorded.
	wall := time.Since(start)
	run.Elapsed = o.window
	if !p.first.IsZero() {
		run.Elapsed = min(o.window, p.clock.Sub(p.first))
	}
	// The caller's context ends on SIGINT/SIGTERM: the report says it was
	// cut short, and judges what it saw.
	run.Interrupted = ctx.Err() != nil && !run.NoAnswer
	if !run.Interrupted && !run.NoAnswer {
		run.Elapsed = o.window // it ran its window (a replay's last batch may fall short of it)
	}
	if p.rec != nil {
		if b, err := json.Marshal(run); err == nil {
			p.rec.Run(b)
		}
	}
	fr := p.frame()
	if p.prom != nil {
		q, b := p.prom.Stats()
		p.log.Info("prometheus requests", "server", p.prom.Server(), "queries", q, "bytes", b,
			"endpoints", len(fr.Endpoints), "read_seconds", wall.Seconds())
	}
	st := report.RunStatus(fr, run)
	if o.output == "json" {
		err := report.WriteJSON(stdout, report.BuildJSONRun(fr, vtopVersion(), st, run))
		if err != nil {
			fmt.Fprintf(stderr, "vtop: %v\n", err)
		}
	} else if err := report.WriteTextRun(stdout, fr, st, run); err != nil {
		fmt.Fprintf(stderr, "vtop: %v\n", err)
	}
	return int(st)
}
