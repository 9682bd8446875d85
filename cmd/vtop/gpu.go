package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/hostproc"
	"github.com/vtop-dev/vtop/sources/nvml"
	"github.com/vtop-dev/vtop/sources/record"
)

// joinEvery is how often local endpoints are matched to their process
// trees: processes change rarely, and a join reads /proc.
const joinEvery = 5 * time.Second

// openGPUSource picks the GPU source for --gpu. "nvml" insists: NVML that
// cannot start is an error, where "auto" shows the reason in the GPU panel.
func openGPUSource(o *options) (sources.GPUSource, error) {
	switch o.gpu {
	case "none":
		return sources.UnavailableGPU{Reason: "GPU reading off (--gpu none)"}, nil
	case "auto", "nvml":
		src := nvml.Open(nvml.Options{PCIeEvery: o.interval})
		if u, ok := src.(sources.UnavailableGPU); ok && o.gpu == "nvml" {
			return nil, fmt.Errorf("--gpu nvml: %s", u.Reason)
		}
		return src, nil
	}
	return nil, fmt.Errorf("--gpu must be auto, nvml or none, not %q", o.gpu)
}

// gpuFeed samples a GPUSource once per interval in its own goroutine and,
// every joinEvery, finds the process trees of the local targets. The
// pipeline takes the newest reading; XID events of readings it never took
// are carried into the next one, so none is lost.
type gpuFeed struct {
	src      sources.GPUSource
	local    []int           // indexes of targets on this host
	wants    []hostproc.Want // their host:port, indexed like local
	remote   []int
	joiner   *hostproc.Joiner
	interval time.Duration
	static   []sources.ProcTree // known process trees instead of the /proc join
	rec      *record.Writer     // --record; nil when not recording

	mu    sync.Mutex
	snap  *sources.GPUSnapshot
	trees []sources.ProcTree // nil: no new join since the last take
	ready chan struct{}
	done  chan struct{}
}

// newGPUFeed feeds from src (NVML, or the simulator's source in the demo).
func newGPUFeed(src sources.GPUSource, targets []sources.Target, interval time.Duration) *gpuFeed {
	g := &gpuFeed{src: src, joiner: hostproc.NewJoiner("/proc"), interval: interval,
		ready: make(chan struct{}, 1), done: make(chan struct{})}
	for i, t := range targets {
		if t.IsLocal() {
			g.local = append(g.local, i)
			g.wants = append(g.wants, hostproc.Want{Host: t.Host, Port: t.Port})
		} else {
			g.remote = append(g.remote, i)
		}
	}
	return g
}

// run samples until ctx ends.
func (g *gpuFeed) run(ctx context.Context) {
	defer close(g.done)
	// A bug in a GPU reading must not take the process down with the
	// terminal in raw mode: the GPU panel says it stopped, the rest goes on.
	defer func() {
		if r := recover(); r != nil {
			g.put(sources.GPUSnapshot{Time: time.Now(), Unavailable: fmt.Sprintf("GPU reading stopped after an internal error: %v", r)}, nil)
		}
	}()
	t := time.NewTicker(g.interval)
	defer t.Stop()
	var lastJoin time.Time
	for {
		snap := g.src.Sample(ctx)
		var trees []sources.ProcTree
		// No GPU readable: the GPU section says why; nothing to join to.
		if snap.Unavailable == "" && len(snap.GPUs) > 0 && len(g.wants) > 0 &&
			(lastJoin.IsZero() || snap.Time.Sub(lastJoin) >= joinEvery) {
			trees = g.joiner.Join(g.wants, snap.PIDs(), snap.Time)
			lastJoin = snap.Time
		}
		g.put(snap, trees)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (g *gpuFeed) put(snap sources.GPUSnapshot, trees []sources.ProcTree) {
	g.mu.Lock()
	if g.snap != nil {
		snap.Events = append(g.snap.Events, snap.Events...)
	}
	g.snap = &snap
	if trees != nil {
		g.trees = trees
	}
	g.mu.Unlock()
	select {
	case g.ready <- struct{}{}:
	default:
	}
}

// useTrees replaces the /proc join with known process trees, indexed like
// the targets.
func (g *gpuFeed) useTrees(trees []sources.ProcTree) {
	g.static = trees
	g.local, g.wants, g.remote = nil, nil, nil
}

// start marks the remote targets and begins sampling.
func (g *gpuFeed) start(ctx context.Context, e *diagnose.Engine) {
	for _, i := range g.remote {
		g.setProcs(e, i, sources.ProcTree{Note: diagnose.NoteNotLocal})
	}
	for i, t := range g.static {
		g.setProcs(e, i, t)
	}
	go g.run(ctx)
}

// drain hands the newest reading and join to the engine.
func (g *gpuFeed) drain(e *diagnose.Engine) {
	g.mu.Lock()
	snap, trees := g.snap, g.trees
	g.snap, g.trees = nil, nil
	g.mu.Unlock()
	for k, t := range trees {
		g.setProcs(e, g.local[k], t)
	}
	if snap != nil {
		if g.rec != nil {
			snap.Time = snap.Time.Round(0) // as the pipeline's drain does
			g.rec.GPU(snap)
		}
		e.IngestGPU(*snap)
	}
}

func (g *gpuFeed) setProcs(e *diagnose.Engine, i int, t sources.ProcTree) {
	g.rec.Procs(i, t)
	e.SetEndpointProcs(i, t)
}

// stop waits for the sampler (its context must be done) and closes the source.
func (g *gpuFeed) stop() error {
	<-g.done
	return g.src.Close()
}
