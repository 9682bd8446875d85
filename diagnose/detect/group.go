package detect

import (
	"slices"

	"github.com/vtop-dev/vtop/diagnose"
)

// The one cause graph: for each rule, the rules that explain its finding
// on the same endpoint. An edge either restates (the cause says the same
// thing more precisely: while it fires, or is pending beside a pending
// finding, the finding is not shown, though its state still runs so it
// appears with its true first-seen time if the cause resolves first) or
// groups (the finding is shown as a symptom under the cause: it takes the
// cause's severity, so the exit status follows the cause, and defers its
// action to it, so no two findings on one endpoint advise opposite things,
// "add replicas" beside "lower --max-num-seqs"). A cause that restates
// must come before its finding in the rule table: the detector reads this
// frame's verdict.
var causeGraph = map[string][]causeEdge{
	// A crash loop explains the outages and restarts: its finding says
	// down now.
	"endpoint_down":      restatedBy("crash_loop"),
	"endpoint_restarted": restatedBy("crash_loop"),
	"preemption":         restatedBy("kv_cache_thrashing", "swapping"),
	"prefix_cache_miss":  restatedBy("kv_cache_thrashing"),
	"prefill_starvation": restatedBy("kv_cache_thrashing"),
	"kv_cache_saturated": restatedBy("kv_cache_thrashing", "swapping", "preemption"),
	"queue_backlog":      explainedBy(stallOrCache...),
	"slo_breach": append(restatedBy("kv_cache_thrashing", "prefill_starvation", "binding_limit", "queue_backlog", "decode_stutter"),
		explainedBy(append(stallOrCache, "runaway_answers")...)...),
	"high_abort_rate": explainedBy(stallOrCache...),
	"decode_stutter":  explainedBy("kv_cache_thrashing", "swapping", "gpu_throttling"),
	// A replica that stalls or thrashes holds the requests routed to it:
	// the imbalance is what the cause looks like from the balancer.
	"replica_imbalance": explainedBy(stallOrCache...),
}

// stallOrCache are the causes a queue, an SLO breach or aborts follow.
var stallOrCache = []string{"engine_stalled", "kv_cache_thrashing", "swapping", "kv_cache_saturated", "preemption", "prefill_starvation", "binding_limit", "gpu_throttling"}

// causeEdge is one edge of the cause graph, from a finding to its cause.
type causeEdge struct {
	cause    string
	restates bool // hide the finding while the cause fires; else group it under the cause
}

func restatedBy(ids ...string) []causeEdge  { return edges(ids, true) }
func explainedBy(ids ...string) []causeEdge { return edges(ids, false) }

func edges(ids []string, restates bool) []causeEdge {
	out := make([]causeEdge, len(ids))
	for i, id := range ids {
		out[i] = causeEdge{cause: id, restates: restates}
	}
	return out
}

// groupingCauses are the causes a rule's finding is grouped under.
func groupingCauses(rule string) []string {
	var out []string
	for _, e := range causeGraph[rule] {
		if !e.restates {
			out = append(out, e.cause)
		}
	}
	return out
}

// groupFindings applies the cause graph on every endpoint, carries the
// result into the frame's lists, and forms the fleet groups. A cause that
// is still pending claims its symptoms too: someone who opens vtop on a
// broken server sees "KV cache thrashing" heading the queue it causes in
// the first seconds, not "Queue backlog → add replicas" beside it. Only a
// firing cause lends its severity (pending findings do not set the exit
// status).
func groupFindings(f *diagnose.Frame) {
	changed := map[string]diagnose.Finding{}
	for i := range f.Endpoints {
		ep := &f.Endpoints[i]
		all := make([]*diagnose.Finding, 0, len(ep.Findings)+len(ep.Pending))
		for j := range ep.Findings {
			all = append(all, &ep.Findings[j])
		}
		for j := range ep.Pending {
			all = append(all, &ep.Pending[j])
		}
		touched := map[*diagnose.Finding]bool{}
		for _, s := range all {
			causes := groupingCauses(s.Rule)
			if len(causes) == 0 || s.State == diagnose.FindingResolving {
				continue
			}
			cause := causeOf(all, causes)
			if cause == nil {
				continue
			}
			s.Cause = cause.ID()
			if s.State == diagnose.FindingFiring && cause.State == diagnose.FindingFiring {
				s.Severity = cause.Severity
			}
			s.Action = say("follow the cause: %s (%s)", cause.Title, cause.Rule)
			s.Flags = nil
			touched[s] = true
			if id := s.ID(); !slices.Contains(cause.Symptoms, id) {
				cause.Symptoms = append(cause.Symptoms, id)
				touched[cause] = true
			}
		}
		if len(touched) == 0 {
			continue
		}
		// Copies, taken before the sort moves the findings.
		for fd := range touched {
			changed[fd.ID()] = *fd
		}
		SortFindings(ep.Findings)
		SortFindings(ep.Pending)
	}
	if len(changed) > 0 {
		carry(f.Findings, changed)
		carry(f.Pending, changed)
	}
	f.Groups = fleetGroups(f.Findings)
}

// causeOf picks the cause a symptom follows among an endpoint's findings:
// a firing one before a pending one, then the most severe.
func causeOf(all []*diagnose.Finding, causes []string) *diagnose.Finding {
	var best *diagnose.Finding
	for _, c := range all {
		if c.State == diagnose.FindingResolving || c.Severity <= diagnose.SevInfo || !slices.Contains(causes, c.Rule) {
			// An info finding is normal life said (a busy GPU at its
			// power cap): no symptom follows it (a thrashing 14B's queue,
			// aborts and stutter were told to "follow the cause: GPU
			// throttling", power cap, info).
			continue
		}
		if best == nil || (c.State == diagnose.FindingFiring) != (best.State == diagnose.FindingFiring) && c.State == diagnose.FindingFiring ||
			(c.State == diagnose.FindingFiring) == (best.State == diagnose.FindingFiring) && c.Severity > best.Severity {
			best = c
		}
	}
	return best
}

// carry copies the grouped findings into the frame's list fs and sorts it.
func carry(fs []diagnose.Finding, changed map[string]diagnose.Finding) {
	n := 0
	for i := range fs {
		fd := &fs[i]
		if c, ok := changed[fd.ID()]; ok {
			// A GPU cause shared by several endpoints gathers the
			// symptoms of each.
			syms := fd.Symptoms
			*fd = c
			for _, s := range syms {
				if !slices.Contains(fd.Symptoms, s) {
					fd.Symptoms = append(fd.Symptoms, s)
				}
			}
			n++
		}
	}
	if n > 0 {
		SortFindings(fs)
	}
}

// fleetGroups gathers firing findings of one rule and title on two or more
// endpoints (symptoms grouped under a cause count with their cause).
func fleetGroups(fs []diagnose.Finding) []diagnose.Group {
	var out []diagnose.Group
	var levers []string // each group's lever (Finding.Lever)
	for i := range fs {
		fd := &fs[i]
		if fd.State != diagnose.FindingFiring || fd.Cause != "" || len(fd.GPUs) > 0 || fd.Rule == "replica_imbalance" {
			continue
		}
		// The title counts: binding_limit names a different limit on
		// each endpoint, and they are not one group. So does the lever
		// (Finding.Lever).
		lever := fd.Lever()
		k := -1
		for j := range out {
			if out[j].Rule == fd.Rule && out[j].Title == fd.Title && levers[j] == lever {
				k = j
				break
			}
		}
		if k < 0 {
			out = append(out, diagnose.Group{Rule: fd.Rule, Title: fd.Title})
			levers = append(levers, lever)
			k = len(out) - 1
		}
		g := &out[k]
		g.Severity = max(g.Severity, fd.Severity)
		if !slices.Contains(g.Targets, fd.Target) {
			g.Targets = append(g.Targets, fd.Target)
		}
		g.Members = append(g.Members, fd.ID())
	}
	return slices.DeleteFunc(out, func(g diagnose.Group) bool { return len(g.Targets) < 2 })
}
