package diagnose

import "github.com/vtop-dev/vtop/sources"

// Limit names what holds an engine's work back: one of the engine's
// limits, or why none does. The names are the JSON report's.
type Limit string

const (
	LimitNone        Limit = ""             // not judged: down, not an engine, no detector
	LimitHealthy     Limit = "healthy"      // nothing waits, latency within target: no limit binds
	LimitIdle        Limit = "idle"         // no requests in the window
	LimitAsleep      Limit = "asleep"       // the engine sleeps or is paused by design
	LimitFewData     Limit = "few_samples"  // too few observations to judge
	LimitBurst       Limit = "burst"        // a transient burst that drains: none binds
	LimitBatchCap    Limit = "batch_cap"    // --max-num-seqs: running flat at a plateau with waiting and KV room
	LimitKVCache     Limit = "kv_cache"     // KV usage pinned, preemptions
	LimitTokenBudget Limit = "token_budget" // --max-num-batched-tokens: step tokens at a ceiling, prefill-heavy
	LimitLoRASlots   Limit = "lora_slots"   // --max-loras: adapters waiting for a slot
	LimitCompute     Limit = "compute"      // batch and KV have room, the GPU is busy
	LimitSpecDecode  Limit = "spec_decode"  // drafts rejected too often for their number
	LimitKVTransfer  Limit = "kv_transfer"  // P/D or offload transfers fail or lag
	LimitStalled     Limit = "stalled"      // no progress with requests held
	LimitRejecting   Limit = "rejecting"    // requests refused before they run: the API server's 4xx, admission
	LimitArrivals    Limit = "arrivals"     // arrivals exceed what raising the binding limit could absorb
	LimitRouting     Limit = "routing"      // a replica gets more than it serves while its pool has room: the router binds
	LimitUnexplained Limit = "unexplained"  // a symptom no limit explains
	LimitMixed       Limit = "mixed"        // a pool or fleet whose members disagree: no clear bottleneck
)

// Symptom reports whether the verdict is about a problem (a limit binds,
// arrivals exceed capacity, or a symptom is unexplained).
func (l Limit) Symptom() bool {
	switch l {
	case LimitNone, LimitHealthy, LimitIdle, LimitAsleep, LimitFewData, LimitBurst, LimitMixed:
		return false
	}
	return true
}

// Verdict is one assessment line of an endpoint, a model pool or the
// fleet: which limit binds, and how many independent signals agree. The
// detector fills it from numbers; the screens and the report word it.
type Verdict struct {
	Limit Limit
	// Signals is how many independent signals agree on Limit (of Checked
	// for a limit; for a pool or the fleet, how many members share it,
	// of Of).
	Signals int
	Of      int
	// Under is the limit that binds under "arrivals exceed capacity" (the
	// one whose flag is the smaller part).
	Under Limit
	// Replicas is how many replicas of the model serve the arrivals
	// (Little's law), with Now today's; 0 when not sized (routing: none
	// to add).
	Replicas, Now int
	// ReplicasAt is the unrounded count Replicas was computed from (a
	// held count: the one it was first shown at); under routing, how many
	// of the Now replicas the pool's arrivals fill at this one's rate.
	ReplicasAt float64
	// Flag is the change that moves the binding limit, when one does.
	Flag *FlagChange
	// Gain is how much raising the binding limit as far as the evidence
	// allows adds to capacity (0.05: +5 %); NaN unknown.
	Gain float64
	// Served, under arrivals or routing, is what the replica serves with
	// its binding limit raised as far as the evidence allows (req/s at
	// today's mix): the capacity its pool is sized by. Measured before
	// its clients gave up where they do; 0 when not measured.
	Served float64
	// GaveUp, under "arrivals exceed capacity", is the share of finished
	// requests whose clients gave up (aborted) while a long queue stood:
	// the engine serves almost none, so what it completes sizes nothing
	// (Replicas stays 0). Zero otherwise.
	GaveUp float64
	// Refused, under "rejecting" at the API server, is the share of
	// inference requests it answered 4xx over the window, Status the most
	// frequent of those statuses ("4xx" where the server groups them,
	// else a code: "400", "429"). Zero and "" otherwise (the engine's
	// admission rejections say their rate in Evidence).
	Refused float64
	Status  string
	// PaceOver, on a healthy verdict (nothing waits), says the
	// inter-token p95 is over the SLO's target all the same: the pace,
	// not a queue (a throttled GPU, prefill steps stalling the streams).
	PaceOver bool
	// Drained, on a healthy verdict, says requests queued within the
	// window and the engine drained them: said as the burst it was, so
	// the line does not change with each scrape that catches the tail
	// of one.
	Drained bool
	// Throttled, on a compute verdict, says the endpoint's GPUs run
	// below their clocks for heat or hardware (not their power cap) at
	// most readings of the window: the compute that binds is a slowed
	// GPU, whatever its utilization reads.
	Throttled bool
	// Shared, on a throttled compute verdict, names the processes that
	// are not an engine's on its GPUs, whose kernels take its time (empty:
	// the GPU's heat or hardware slows it).
	Shared Text
	// Server is the engine whose flags the line names (an endpoint's;
	// zero, vLLM's, for a pool or the fleet).
	Server sources.Server
	// Evidence are the numbers behind it; Ruled lists the limits checked
	// and ruled out (unexplained: what was looked at).
	Evidence []Evidence
	Ruled    []Limit
}
