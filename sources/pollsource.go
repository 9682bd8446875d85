package sources

import (
	"context"
	"time"
)

// PollSource is the poller as a Source: scrapes leave its newest-wins
// mailbox as batches, so a busy pipeline sees the latest scrape of each
// target, never a backlog.
type PollSource struct {
	P *Poller
	// Clock stamps batches; time.Now when nil.
	Clock func() time.Time
}

// NewPollSource wraps a poller.
func NewPollSource(p *Poller) *PollSource { return &PollSource{P: p} }

// PollNow makes every target poll immediately.
func (s *PollSource) PollNow() { s.P.PollNow() }

// Run announces the targets, polls until ctx ends and forwards the results.
func (s *PollSource) Run(ctx context.Context, out chan<- Batch) error {
	clock := s.Clock
	if clock == nil {
		clock = time.Now
	}
	if !Send(ctx, out, Batch{Now: clock(), Arrived: s.P.Targets()}) {
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.P.Run(ctx)
	}()
	defer func() { <-done }()
	// A heartbeat each interval moves the pipeline's clock when no target
	// answers, so they turn stale.
	tick := time.NewTicker(s.P.cfg.Interval)
	defer tick.Stop()
	box := s.P.Mailbox()
	gather := s.P.gatherFor()
	pause := time.NewTimer(time.Hour)
	pause.Stop()
	defer pause.Stop()
	var taken []Indexed
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-box.Ready():
			if gather > 0 {
				pause.Reset(gather)
				select {
				case <-ctx.Done():
					return nil
				case <-pause.C:
				}
				select { // what arrived meanwhile is taken now
				case <-box.Ready():
				default:
				}
			}
		case <-tick.C:
		}
		taken = box.Take(taken[:0])
		b := Batch{Now: clock()}
		for _, t := range taken {
			b.Scrapes = append(b.Scrapes, t.Scrape)
		}
		// taken's array is reused: past a smaller batch's length it
		// would keep older scrapes' snapshots alive (~8 KB a target).
		clear(taken)
		if !Send(ctx, out, b) {
			return nil
		}
	}
}

// gatherFor is how long a large fleet's first new scrape waits for others
// before they go on as one batch: the hand-off then wakes this goroutine and
// the pipeline once per handful of scrapes, not twice per scrape (a tenth
// of vtop's CPU at 200 endpoints went to those wake-ups). A small fleet's
// scrapes rarely meet, so they go on at once.
func (p *Poller) gatherFor() time.Duration {
	if len(p.targets) < gatherFleet {
		return 0
	}
	return min(p.cfg.Interval/20, 50*time.Millisecond)
}

// gatherFleet is the fleet size from which scrapes are gathered.
const gatherFleet = 20
