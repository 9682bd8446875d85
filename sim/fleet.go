package sim

import (
	"fmt"
	"time"
)

// FleetConfig describes a simulated fleet.
type FleetConfig struct {
	Replicas []ReplicaConfig
	// Epoch is the wall-clock time of simulated time zero: the base of
	// every timestamp exposed (_created, process_start_time_seconds). Zero
	// takes a fixed date, so in-process runs are byte-for-byte repeatable.
	// Serve replaces it so that the fleet's present is the clock's.
	Epoch time.Time
	// HideClientAborts leaves requests the client gave up on out of
	// finished_reason="abort" and the per-request histograms, as vLLM V1
	// releases do (vllm#31503, vllm#55634). By default they are counted, as
	// the issue that specified the simulator asks.
	HideClientAborts bool
}

// DefaultEpoch is simulated time zero when FleetConfig.Epoch is zero.
var DefaultEpoch = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// Fleet is a set of simulated replicas. In-process (tests, the rules
// engine) it moves only when told to, with Advance; served over HTTP it
// follows a wall clock and each replica catches up when it is read.
type Fleet struct {
	replicas   []*Replica
	epoch      time.Time
	seed       uint64
	elapsed    time.Duration
	clock      func() time.Time // nil: driven by Advance
	hideAborts bool
	gpus       GPUs
}

// NewFleet builds a fleet. The same config and seed give the same fleet,
// request for request.
func NewFleet(cfg FleetConfig, seed uint64) (*Fleet, error) {
	if len(cfg.Replicas) == 0 {
		return nil, fmt.Errorf("a fleet needs at least one replica")
	}
	f := &Fleet{epoch: cfg.Epoch, seed: seed, hideAborts: cfg.HideClientAborts}
	if f.epoch.IsZero() {
		f.epoch = DefaultEpoch
	}
	f.gpus.f = f
	gpu := 0
	for i, rc := range cfg.Replicas {
		r, err := newReplica(f, i, rc, seed, gpu)
		if err != nil {
			return nil, err
		}
		gpu += len(r.engines)
		f.replicas = append(f.replicas, r)
	}
	return f, nil
}

// Advance moves every replica d of simulated time forward. Minutes of
// simulated load take milliseconds.
func (f *Fleet) Advance(d time.Duration) {
	f.elapsed += d
	for _, r := range f.replicas {
		r.mu.Lock()
		r.advanceTo(f.elapsed)
		r.mu.Unlock()
	}
}

// Elapsed is the simulated time since the fleet started (Advance mode).
func (f *Fleet) Elapsed() time.Duration { return f.elapsed }

// Now is the simulated wall-clock time (Advance mode).
func (f *Fleet) Now() time.Time { return f.epoch.Add(f.elapsed) }

// Epoch is the wall-clock time of simulated time zero.
func (f *Fleet) Epoch() time.Time { return f.epoch }

// Replicas returns the replicas in order.
func (f *Fleet) Replicas() []*Replica { return f.replicas }

// GPUs returns the fleet's simulated GPUs as a sources.GPUSource.
func (f *Fleet) GPUs() *GPUs { return &f.gpus }

// followClock makes the fleet track a wall clock from where it stands:
// Epoch moves so that now on the clock is the fleet's elapsed time, and from
// then on reading a replica first runs it up to clock() - Epoch. The HTTP
// server sets it; a fleet advanced beforehand (the demo's warm-up) keeps
// that history, timestamped in the past.
func (f *Fleet) followClock(clock func() time.Time) {
	f.epoch = clock().Add(-f.elapsed)
	f.clock = clock
}

// sync brings r up to the wall clock; r.mu must be held.
func (f *Fleet) sync(r *Replica) {
	if f.clock == nil {
		return
	}
	if t := f.clock().Sub(f.epoch); t > r.now {
		r.advanceTo(t)
	}
}

// simNow is the simulated time the wall clock stands at (0 without one).
func (f *Fleet) simNow() time.Duration {
	if f.clock == nil {
		return f.elapsed
	}
	return f.clock().Sub(f.epoch)
}
