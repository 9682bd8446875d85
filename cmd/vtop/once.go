package main

import (
	"context"
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
	if o.prom.url == "" {
		p.detector.SetForCap(o.window / 2)
	}
	// A window of data needs polls at both ends: wait the window plus half
	// an interval for the last one. A source that is done sooner (a
	// backfill, a replay) ends the wait.
	wctx, cancel := context.WithTimeout(ctx, o.window+o.interval/2)
	defer cancel()
	began := time.Now()
	if err := p.serve(wctx, loopConfig{}); err != nil {
		p.log.Debug("sources", "err", err)
	}
	took := time.Since(began)
	fr := p.frame()
	if p.prom != nil {
		q, b := p.prom.Stats()
		p.log.Info("prometheus requests", "server", p.prom.Server(), "queries", q, "bytes", b,
			"endpoints", len(fr.Endpoints), "read_seconds", took.Seconds())
	}
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
