package record

import (
	"context"
	"io"
	"sync"

	"github.com/vtop-dev/vtop/sources"
)

// Source replays a recording as a sources.Source: one Batch per recorded
// evaluation, holding what the live pipeline ingested since the one
// before, with Now at the evaluation's time. A consumer that evaluates once
// per batch evaluates at the live run's instants. Batches are sent as fast
// as out takes them; pacing is the consumer's.
type Source struct {
	paths      []string
	maxSamples int

	mu   sync.Mutex
	stop error
	run  []byte
}

// RunInfo is the last run record read (nil when none); valid after Run
// returns.
func (s *Source) RunInfo() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run
}

// NewSource replays the files of one recording, oldest first.
func NewSource(paths []string, maxSamples int) *Source {
	return &Source{paths: paths, maxSamples: maxSamples}
}

// Stopped is the damage where the replay stopped (a *Damage), or nil when
// it reached the recording's end; valid after Run returns.
func (s *Source) Stopped() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stop
}

// Run implements sources.Source. It returns an error only when the first
// file cannot be opened; damage later is Stopped's.
func (s *Source) Run(ctx context.Context, out chan<- sources.Batch) error {
	rp, err := OpenReplay(s.paths, s.maxSamples)
	if err != nil {
		return err
	}
	defer rp.Close()
	var b sources.Batch
	for _, t := range rp.Header().Targets {
		b.Arrived = append(b.Arrived, t.Source())
	}
	for {
		it, err := rp.nextRaw()
		if err != nil {
			if err != io.EOF {
				s.mu.Lock()
				s.stop = err
				s.mu.Unlock()
			}
			return nil
		}
		switch it.Kind {
		case KindScrape:
			b.Scrapes = append(b.Scrapes, it.Scrape) // parsed below, at the tick
		case KindGPU:
			// The live run applied each reading on its own: two between
			// evaluations are both handed over, or the GPU history loses
			// every other point (seen: utilization over the window 0.9983
			// replayed against 0.9990 live).
			if b.GPU != nil {
				b.EarlierGPU = append(b.EarlierGPU, *b.GPU)
			}
			g := it.GPU
			b.GPU = &g
			if b.Now.Before(g.Time) {
				b.Now = g.Time
			}
		case KindProcs:
			b.Procs = append(b.Procs, sources.TargetProcs{Target: rp.Targets()[it.Index].Name, Tree: it.Procs})
		case KindTarget:
			b.Arrived = append(b.Arrived, it.Target.Source())
		case KindDeparted:
			b.Departed = append(b.Departed, it.Target.Name)
		case KindRun:
			s.mu.Lock()
			s.run = it.Run
			s.mu.Unlock()
		case KindTick:
			b.Now = it.Time
			ss := make([]*sources.Scrape, len(b.Scrapes))
			for i := range b.Scrapes {
				ss[i] = &b.Scrapes[i]
			}
			rp.parse(ss)
			if !sources.Send(ctx, out, b) {
				return nil
			}
			b = sources.Batch{}
		}
	}
}
