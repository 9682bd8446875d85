package main

import (
	"log/slog"

	"github.com/vtop-dev/vtop/app"
)

// appConfig is what the pipeline needs of the resolved options.
func (o *options) appConfig() *app.Config {
	return &app.Config{
		Targets: o.targets, Once: o.once, Interval: o.interval, Window: o.window,
		MaxSamples: o.maxSamples, MaxParallel: o.maxParallel, HTTP: o.http, GPU: o.gpu,
		Prom: app.PromConfig{URL: o.prom.url, Selector: o.prom.selector, Headers: o.prom.headers,
			Backfill: o.prom.backfill, At: o.prom.at},
		DCGM: o.dcgm, Discover: o.discover, Rules: o.rules,
		Record: o.record, RecordMax: o.recordMax, Version: vtopVersion(),
		GPUSource: o.gpuSource, ProcTrees: o.procTrees,
	}
}

// newPipeline wires o's sources; reading from Prometheus, o's interval and
// window become the server's.
func newPipeline(o *options, logger *slog.Logger) (*app.Pipeline, error) {
	c := o.appConfig()
	p, err := app.New(c, logger)
	o.interval, o.window = c.Interval, c.Window
	return p, err
}
