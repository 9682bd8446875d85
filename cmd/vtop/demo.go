package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"time"

	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/ui/report"
)

const (
	// demoWarmup is simulated history the fleet has when vtop opens, so
	// the first frame shows busy engines rather than a cold start.
	demoWarmup = 20 * time.Second
	// demoIncidents is when incidents begin, in simulated time: about a
	// minute after vtop opens.
	demoIncidents = demoWarmup + time.Minute
	demoSeed      = 1
)

// startDemo serves the demo fleet on loopback ports and returns its targets
// and its simulated GPUs; stop shuts it down (so does ctx ending). The TUI
// calls it too.
func startDemo(ctx context.Context) (targets []sources.Target, gpus sources.GPUSource, trees []sources.ProcTree, stop func(), err error) {
	fleet, err := sim.NewFleet(sim.DemoConfig(demoIncidents), demoSeed)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	fleet.Advance(demoWarmup)
	srv, err := sim.Serve(fleet, sim.ServeConfig{Host: "127.0.0.1"})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	for i, u := range srv.URLs() {
		t, err := sources.ParseTarget(u)
		if err != nil {
			srv.Close()
			return nil, nil, nil, nil, err
		}
		r := fleet.Replicas()[i]
		t.Name = r.Name()
		t.MaxNumSeqs = r.Config().MaxNumSeqs // the operator knows the flags
		targets = append(targets, t)
		// The replicas live in vtop's own process: their (simulated) PIDs,
		// not /proc, say which GPUs each one holds.
		api, engines := r.PIDs()
		pids := append([]int{api}, engines...)
		sort.Ints(pids)
		trees = append(trees, sources.ProcTree{Root: api, RootName: "vllm (simulated)", PIDs: pids})
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			srv.Close()
		case <-done:
		}
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			close(done)
			srv.Close()
		}
	}
	return targets, fleet.GPUs(), trees, stop, nil
}

// runDemo watches the demo fleet: in the TUI on a terminal; with --once or
// when stdout is not a terminal, it prints the report of one window.
func runDemo(ctx context.Context, o *options, stdout, stderr io.Writer, logger *slog.Logger) int {
	targets, gpus, trees, stop, err := startDemo(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "vtop: demo: %v\n", err)
		return int(report.Unknown)
	}
	defer stop()
	o.targets, o.gpuSource, o.procTrees = targets, gpus, trees
	o.note = "demo: simulated fleet, incidents begin about " + (demoIncidents - demoWarmup).String() + " in"
	p, err := newPipeline(o, logger)
	if err != nil {
		fmt.Fprintf(stderr, "vtop: %v\n", err)
		return int(report.Unknown)
	}
	if !o.once && isTerminal(stdout) {
		return watch(ctx, p, o, stdout, stderr, logger)
	}
	fmt.Fprintf(stderr, "vtop: demo fleet of %d simulated vLLM replicas on 127.0.0.1; incidents begin about %s in. Collecting %s…\n",
		len(targets), demoIncidents-demoWarmup, o.window)
	return collectAndReport(ctx, p, o, stdout, stderr)
}
