package sources

import (
	"context"
	"slices"
	"time"
)

// PollSource is the poller as a Source: scrapes leave its newest-wins
// mailbox as batches, so a busy pipeline sees the latest scrape of each
// target, never a backlog.
type PollSource struct {
	P *Poller
	// Clock stamps batches; time.Now when nil.
	Clock func() time.Time
	want  chan []Target // the newest Update not yet applied
}

// NewPollSource wraps a poller.
func NewPollSource(p *Poller) *PollSource { return &PollSource{P: p, want: make(chan []Target, 1)} }

// PollNow makes every target poll immediately.
func (s *PollSource) PollNow() { s.P.PollNow() }

// Update makes ts the targets polled from now on (discovery): those not
// polled yet are added, those polled and not in ts removed, and Run says
// so in its batches, after the last results of the removed ones and before
// the first of the added. The newest Update wins over one Run has not
// applied yet.
func (s *PollSource) Update(ts []Target) {
	ts = slices.Clone(ts)
	for {
		select {
		case s.want <- ts:
			return
		default:
		}
		select {
		case <-s.want:
		default:
		}
	}
}

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
	pause := time.NewTimer(time.Hour)
	pause.Stop()
	defer pause.Stop()
	var taken []Indexed
	for {
		var b Batch
		select {
		case <-ctx.Done():
			return nil
		case ts := <-s.want:
			b = s.apply(ts)
		case <-box.Ready():
			// Computed each time: discovery grows and shrinks the fleet.
			if gather := s.P.gatherFor(); gather > 0 {
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
		b.Now = clock()
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

// apply makes ts the polled targets and returns the batch that says so.
// The removed targets' results not yet taken are dropped with them (the
// pipeline would take a scrape of a departed target for an arrival), and
// those still to come never reach the mailbox.
func (s *PollSource) apply(ts []Target) Batch {
	want := make(map[string]bool, len(ts))
	for _, t := range ts {
		want[t.Name] = true
	}
	var b Batch
	for _, t := range s.P.Targets() {
		if !want[t.Name] {
			b.Departed = append(b.Departed, t.Name)
		}
		delete(want, t.Name)
	}
	for _, t := range ts {
		if want[t.Name] {
			b.Arrived = append(b.Arrived, t)
			delete(want, t.Name) // a name given twice arrives once
		}
	}
	slices.Sort(b.Departed)
	s.P.Remove(b.Departed...)
	s.P.Add(b.Arrived...)
	return b
}

// gatherFor is how long a large fleet's first new scrape waits for others
// before they go on as one batch: the hand-off then wakes this goroutine and
// the pipeline once per handful of scrapes, not twice per scrape (a tenth
// of vtop's CPU at 200 endpoints went to those wake-ups). A small fleet's
// scrapes rarely meet, so they go on at once.
func (p *Poller) gatherFor() time.Duration {
	if p.Len() < gatherFleet {
		return 0
	}
	return min(p.cfg.Interval/20, 50*time.Millisecond)
}

// gatherFleet is the fleet size from which scrapes are gathered.
const gatherFleet = 20
