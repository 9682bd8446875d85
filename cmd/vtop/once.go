package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/vtop-dev/vtop/app"
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

func collectAndReport(ctx context.Context, p *app.Pipeline, o *options, stdout, stderr io.Writer) int {
	// A report cannot wait longer than its one window: a condition that
	// held for half of it counts as held for the rule's for.
	// With history from a server (--prometheus) the rules have theirs.
	var forCap time.Duration
	if o.prom.url == "" {
		forCap = o.window / 2
		p.SetForCap(forCap)
	}
	if err := p.StartRecording(o.appConfig(), forCap); err != nil {
		fmt.Fprintf(stderr, "vtop: %v\n", err)
		return int(report.Unknown)
	}
	defer p.StopRecording(stderr)
	// A window of data needs polls at both ends: wait the window plus half
	// an interval for the last one. A source that is done sooner (a
	// backfill, a replay) ends the wait; so does every target failing its
	// first polls: waiting the window out would only delay the same answer.
	wctx, cancel := context.WithTimeout(ctx, o.window+o.interval/2)
	defer cancel()
	start := time.Now()
	run := report.Run{Window: o.window}
	lc := app.LoopConfig{Stop: func() bool {
		n := len(o.targets)
		scrapes, answered := p.Scrapes()
		run.NoAnswer = n > 0 && answered == 0 && scrapes >= report.NoAnswerPolls*n
		return run.NoAnswer
	}}
	if err := p.Serve(wctx, lc); err != nil {
		p.Log().Debug("sources", "err", err)
	}
	// Data time, as the detector counts it: a replay reports the span it
	// replayed, the same as the live run it recorded.
	wall := time.Since(start)
	run.Elapsed = o.window
	if span, ok := p.Span(); ok {
		run.Elapsed = min(o.window, span)
	}
	// The caller's context ends on SIGINT/SIGTERM: the report says it was
	// cut short, and judges what it saw.
	run.Interrupted = ctx.Err() != nil && !run.NoAnswer
	if !run.Interrupted && !run.NoAnswer {
		run.Elapsed = o.window // it ran its window (a replay's last batch may fall short of it)
	}
	if b, err := json.Marshal(run); err == nil {
		p.RecordRun(b)
	}
	fr := p.Frame()
	p.LogPromStats(len(fr.Endpoints), wall)
	st := report.RunStatus(fr, run)
	if o.output == "markdown" {
		if err := report.WriteMarkdown(stdout, fr, st); err != nil {
			fmt.Fprintf(stderr, "vtop: %v\n", err)
		}
	} else if o.output == "json" {
		err := report.WriteJSON(stdout, report.BuildJSONRun(fr, vtopVersion(), st, run))
		if err != nil {
			fmt.Fprintf(stderr, "vtop: %v\n", err)
		}
	} else if err := report.WriteTextRun(stdout, fr, st, run); err != nil {
		fmt.Fprintf(stderr, "vtop: %v\n", err)
	}
	return int(st)
}
