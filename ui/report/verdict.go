package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/diagnose/detect"
	f "github.com/vtop-dev/vtop/ui/format"
)

// limitNames are the words for each limit on the verdict line.
var limitNames = map[diagnose.Limit]string{
	diagnose.LimitHealthy:     "no bottleneck: nothing waits, latency within target",
	diagnose.LimitIdle:        "idle",
	diagnose.LimitAsleep:      "idle: the engine sleeps or is paused",
	diagnose.LimitFewData:     "too few observations to judge yet",
	diagnose.LimitBurst:       "no bottleneck: a burst the engine drained",
	diagnose.LimitBatchCap:    "batch cap (--max-num-seqs)",
	diagnose.LimitKVCache:     "KV cache",
	diagnose.LimitTokenBudget: "token budget (--max-num-batched-tokens)",
	diagnose.LimitLoRASlots:   "LoRA adapter slots (--max-loras)",
	diagnose.LimitCompute:     "compute (batch and KV have room, the GPU is busy)",
	diagnose.LimitSpecDecode:  "speculative decoding (drafts rejected too often)",
	diagnose.LimitKVTransfer:  "KV transfer",
	diagnose.LimitStalled:     "no progress: the engine is stalled",
	diagnose.LimitRejecting:   "rejecting: requests refused before they run",
	diagnose.LimitArrivals:    "arrivals exceed capacity",
	diagnose.LimitRouting:     "routing: a replica gets more than it serves while its pool has room",
	diagnose.LimitUnexplained: "unexplained: no limit binds on the evidence",
	diagnose.LimitMixed:       "no clear bottleneck: members disagree",
}

// quietLine words an endpoint's verdict when nothing binds: whether a
// queue formed and drained within the window, and whether tokens stream
// at the target pace all the same.
func quietLine(v *diagnose.Verdict) string {
	queue := "nothing waits"
	if v.Limit == diagnose.LimitBurst || v.Drained {
		queue = "a burst the engine drained"
	}
	switch {
	case v.PaceOver:
		return "no bottleneck in the queue: " + queue + ", but tokens stream slower than target (inter-token p95; see the SLO finding)"
	case v.Limit == diagnose.LimitBurst || v.Drained:
		return "no bottleneck: " + queue
	}
	return LimitName(v.Limit)
}

// LimitName words a limit.
func LimitName(l diagnose.Limit) string { return limitNames[l] }

// VerdictLine is the one assessment line of an endpoint, a model pool or
// the fleet, from the verdict's numbers; "" when there is none (down, not
// an engine).
func VerdictLine(v *diagnose.Verdict, pool bool) string {
	if v.Limit == diagnose.LimitNone {
		return ""
	}
	s := LimitName(v.Limit)
	if v.Limit == diagnose.LimitCompute && v.Throttled {
		s = "compute: the GPU runs throttled (heat or hardware slowdown; see the GPU finding), batch and KV have room"
		if !pool && v.Shared.Form != "" {
			s = "compute: another process on its GPU, " + f.Say(v.Shared) + ": its kernels take the engine's time, batch and KV have room"
		}
	}
	if (v.Limit == diagnose.LimitHealthy || v.Limit == diagnose.LimitBurst) && !pool {
		s = quietLine(v)
	}
	if v.Limit == diagnose.LimitHealthy && pool && v.PaceOver {
		s = "no bottleneck in the queue: nothing waits, but tokens stream slower than target on some members (see their SLO findings)"
	}
	if v.Limit == diagnose.LimitRejecting && !pool && v.Refused > 0 {
		// One signal, the API server's own count: its share says it all.
		return fmt.Sprintf("bottleneck: rejecting: %s of inference requests answered %s by the API server, before any engine saw them", f.Percent(v.Refused), v.Status)
	}
	switch {
	case pool && v.Of > 0 && (v.Limit.Symptom() || v.Limit == diagnose.LimitIdle):
		s += fmt.Sprintf(" (%d of %d endpoints)", v.Signals, v.Of)
	case pool && v.Limit == diagnose.LimitMixed:
		s += fmt.Sprintf(" (%d of %d endpoints with a symptom)", v.Signals, v.Of)
	case v.Limit.Symptom() && v.Of > 0:
		s += fmt.Sprintf(", %d of %d signals agree", v.Signals, v.Of)
	}
	switch {
	case v.Limit == diagnose.LimitArrivals && !pool && v.GaveUp > 0:
		s += fmt.Sprintf(": clients give up in the queue (%s of finished requests aborted), not sized in replicas", f.Percent(v.GaveUp))
		if v.Under != diagnose.LimitNone && v.Under != diagnose.LimitUnexplained {
			s += "; under it the " + LimitName(v.Under) + " binds"
		}
	case v.Limit == diagnose.LimitRouting && !pool:
		s += fmt.Sprintf(": the pool's arrivals fill about %s of its %d replicas at this one's rate: route by load, no replica to add", f.Dec(v.ReplicasAt, 1), v.Now)
		if v.GaveUp > 0 {
			s += fmt.Sprintf("; clients give up in its queue (%s of finished requests aborted)", f.Percent(v.GaveUp))
		}
		if v.Under != diagnose.LimitNone {
			s += "; under it the " + LimitName(v.Under) + " binds"
		}
	case v.Limit == diagnose.LimitArrivals && !pool:
		s += fmt.Sprintf(": about %d replicas instead of %d", v.Replicas, v.Now)
		if v.Under != diagnose.LimitNone {
			s += "; the " + LimitName(v.Under) + " binds"
			if v.Flag != nil && !math.IsNaN(v.Gain) {
				s += fmt.Sprintf(", %s %s → %s adds %s, the smaller part", v.Flag.Flag, f.Value(v.Flag.From), f.Value(v.Flag.To), f.Percent(v.Gain))
			}
		}
	}
	if len(v.Ruled) > 0 {
		names := make([]string, len(v.Ruled))
		for i, l := range v.Ruled {
			names[i] = string(l)
		}
		s += "; ruled out: " + strings.Join(names, ", ")
	}
	// The limits' names carry vLLM's flags: an SGLang replica's batch cap
	// read "--max-num-seqs".
	return "bottleneck: " + detect.InEngineTerms(s, v.Server)
}

// JSONVerdict is the assessment line of an endpoint, a model pool or the
// fleet (docs/json-report.md).
type JSONVerdict struct {
	Limit    string         `json:"limit"`   // see diagnose.Limit: healthy, idle, batch_cap, kv_cache, arrivals, unexplained, mixed, …
	Text     string         `json:"text"`    // the line as the text report prints it
	Signals  int            `json:"signals"` // independent signals (pool, fleet: endpoints) that agree
	Of       int            `json:"of"`      // of how many
	Under    string         `json:"under,omitempty"`
	Replicas int            `json:"replicas,omitempty"`
	Now      int            `json:"replicas_now,omitempty"`
	Filled   *Num           `json:"pool_filled,omitempty"` // routing: how many of replicas_now the pool's arrivals fill at this replica's rate
	Gain     *Num           `json:"gain,omitempty"`        // what raising the binding limit adds to capacity (0.05: +5 %)
	GaveUp   *Num           `json:"gave_up,omitempty"`     // arrivals: the share of finished requests whose clients gave up in the queue
	Refused  *Num           `json:"refused,omitempty"`     // rejecting: the share of inference requests the API server answered 4xx
	Status   string         `json:"status,omitempty"`      // rejecting: the most frequent of those statuses ("4xx", "400", "429")
	Flag     *JSONFlag      `json:"flag,omitempty"`
	Evidence []JSONEvidence `json:"evidence"`
	RuledOut []string       `json:"ruled_out,omitempty"`
}

// Verdict converts a verdict to the JSON layout; nil when there is none.
func Verdict(v *diagnose.Verdict, pool bool) *JSONVerdict {
	if v.Limit == diagnose.LimitNone {
		return nil
	}
	j := &JSONVerdict{Limit: string(v.Limit), Text: VerdictLine(v, pool), Signals: v.Signals, Of: v.Of, Under: string(v.Under),
		Replicas: v.Replicas, Now: v.Now, Evidence: evidence(v.Evidence)}
	if v.Limit == diagnose.LimitArrivals && !math.IsNaN(v.Gain) {
		j.Gain = numPtr(v.Gain)
	}
	if v.Limit == diagnose.LimitRouting && !pool {
		j.Filled = numPtr(v.ReplicasAt)
	}
	if v.GaveUp > 0 {
		j.GaveUp = numPtr(v.GaveUp)
	}
	if v.Refused > 0 {
		j.Refused, j.Status = numPtr(v.Refused), v.Status
	}
	if v.Flag != nil {
		j.Flag = &JSONFlag{Flag: v.Flag.Flag, From: f.Value(v.Flag.From), To: f.Value(v.Flag.To), Why: f.Say(v.Flag.Why)}
	}
	for _, l := range v.Ruled {
		j.RuledOut = append(j.RuledOut, string(l))
	}
	return j
}
