package hostproc

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// joinEvery is how often local endpoints are matched to their process
// trees: processes change rarely, and a join reads /proc.
const joinEvery = 5 * time.Second

// GPUFeed is the GPUs of this machine as a sources.Source: it samples a
// GPUSource once per interval and, every joinEvery, finds the process trees
// of the local targets. A sampler that gets ahead of the pipeline keeps
// only the newest reading; XID events of readings never sent are carried
// into the next one, so none is lost.
type GPUFeed struct {
	src      sources.GPUSource
	interval time.Duration
	joiner   *Joiner
	local    []string // names of targets on this host
	wants    []Want   // their host:port, indexed like local
	remote   []string
	static   []sources.TargetProcs // known process trees instead of the /proc join

	mu    sync.Mutex
	snap  *sources.GPUSnapshot
	trees []sources.ProcTree // nil: no new join since the last send
	ready chan struct{}
}

// NewGPUFeed feeds from src (NVML, or the simulator's GPUs in the demo) and
// joins the local ones among targets to their processes through procRoot
// ("/proc").
func NewGPUFeed(src sources.GPUSource, targets []sources.Target, interval time.Duration, procRoot string) *GPUFeed {
	g := &GPUFeed{src: src, joiner: NewJoiner(procRoot), interval: interval, ready: make(chan struct{}, 1)}
	for _, t := range targets {
		if t.IsLocal() {
			g.local = append(g.local, t.Name)
			g.wants = append(g.wants, Want{Host: t.Host, Port: t.Port})
		} else {
			g.remote = append(g.remote, t.Name)
		}
	}
	return g
}

// UseTrees replaces the /proc join with known process trees.
func (g *GPUFeed) UseTrees(trees []sources.TargetProcs) {
	g.static = trees
	g.local, g.wants, g.remote = nil, nil, nil
}

// Run samples until ctx ends, then closes the GPU source.
func (g *GPUFeed) Run(ctx context.Context, out chan<- sources.Batch) error {
	first := sources.Batch{Now: time.Now(), Procs: append([]sources.TargetProcs(nil), g.static...)}
	for _, n := range g.remote {
		first.Procs = append(first.Procs, sources.TargetProcs{Target: n, Tree: sources.ProcTree{Note: sources.NoteNotLocal}})
	}
	if !sources.Send(ctx, out, first) {
		return g.src.Close()
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.sample(sctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	for {
		select {
		case <-ctx.Done():
			cancel()
			<-done
			return g.src.Close()
		case <-g.ready:
		}
		g.mu.Lock()
		snap, trees := g.snap, g.trees
		g.snap, g.trees = nil, nil
		g.mu.Unlock()
		if snap == nil {
			continue
		}
		b := sources.Batch{Now: snap.Time, GPU: snap}
		for k, t := range trees {
			b.Procs = append(b.Procs, sources.TargetProcs{Target: g.local[k], Tree: t})
		}
		if !sources.Send(ctx, out, b) {
			cancel()
			<-done
			return g.src.Close()
		}
	}
}

// sample reads the GPUs once per interval until ctx ends.
func (g *GPUFeed) sample(ctx context.Context) {
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

func (g *GPUFeed) put(snap sources.GPUSnapshot, trees []sources.ProcTree) {
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
