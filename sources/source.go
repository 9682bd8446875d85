package sources

import (
	"context"
	"time"
)

// Source is anything that observes vLLM targets: the poller scraping
// /metrics, a Prometheus server's API, a recording being replayed, the local
// GPUs. Run sends Batches to out, in order of their Now, until ctx ends or
// the source has nothing more to say (a finished replay, a one-shot
// backfill); it returns then, with an error only when it could not start.
//
// Time belongs to the source: every observation carries the time it was
// taken, and Batch.Now is the source's clock. The pipeline evaluates rules
// at the newest Now it has seen and never reads the wall clock, so a replay
// that sends recorded batches as fast as out accepts them is diagnosed
// exactly as it was live. A live source stamps Now with time.Now() and sends
// a batch at least once per poll interval, even an empty one, so a target
// that stops answering turns stale.
//
// Sends on out block while the pipeline is busy: a source that must not fall
// behind (a live poller) keeps only the newest observation of each target
// meanwhile; a replay or a backfill simply waits, and loses nothing.
type Source interface {
	Run(ctx context.Context, out chan<- Batch) error
}

// Batch is what a source hands the pipeline at once. Targets are named by
// Target.Name (unique within a run); the pipeline adds a target the first
// time it sees the name in Arrived or in a Scrape.
type Batch struct {
	Now      time.Time    // the source's clock; no observation below is newer
	Arrived  []Target     // targets that appeared (at start, or discovered)
	Departed []string     // names of targets that are gone (applied before Arrived)
	Scrapes  []Scrape     // results, each stamped with its own Time
	GPU      *GPUSnapshot // a reading of GPUs, or nil
	// EarlierGPU are readings older than GPU, oldest first, each applied
	// on its own before it: a replay hands over every reading the live
	// run applied between two evaluations (the GPU history keeps each).
	EarlierGPU []GPUSnapshot
	Procs      []TargetProcs
	// Problems are what a source says about itself (a discovery rule that
	// fails, a bound reached, history it could not read): each replaces
	// the one with its Key, and an empty Text clears it.
	Problems []Problem
	// Interval, when set, is the cadence the source learned late (a
	// Prometheus server that was unreachable at start): the engine's
	// interval follows it.
	Interval time.Duration
}

// Problem is one thing a source wants said about itself, until cleared.
type Problem struct {
	Key  string // who says it: "file_sd targets.json", "prometheus backfill"
	Text string // one sanitized line; "" clears the Key's
	// Feeds: the source itself fails, and every endpoint's data comes
	// through it (Prometheus): its endpoints are not down, only unseen,
	// and stay stale with their last values until it answers again.
	Feeds bool
	// Fails: the source itself fails (a dcgm-exporter, a discovery rule),
	// as against a bound reached or a gap in history: the header names it
	// as failing. Feeds implies it.
	Fails bool
}

// TargetProcs is the process tree serving a target on this host.
type TargetProcs struct {
	Target string
	Tree   ProcTree
}

// Empty reports whether the batch carries nothing but its clock.
func (b *Batch) Empty() bool {
	return len(b.Arrived) == 0 && len(b.Departed) == 0 && len(b.Scrapes) == 0 && b.GPU == nil && len(b.EarlierGPU) == 0 && len(b.Procs) == 0 && len(b.Problems) == 0 && b.Interval == 0
}

// PollNower is a live source that can be asked to poll at once (the UI's
// "r" key). Sources that cannot (a replay) do not implement it.
type PollNower interface {
	PollNow()
}

// Send delivers b on out unless ctx ends first; it reports whether it did.
func Send(ctx context.Context, out chan<- Batch, b Batch) bool {
	select {
	case out <- b:
		return true
	case <-ctx.Done():
		return false
	}
}
