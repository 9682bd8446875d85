package diagnose

import (
	"slices"
	"strconv"
	"strings"
)

// Causes over symptoms. causeGraph declares which findings are symptoms
// of which causes: on an endpoint where a cause fires, its symptoms are
// grouped under it. A grouped symptom takes the cause's severity (so the
// exit status follows the cause) and defers its action to the cause, so
// no two findings on one endpoint advise opposite things ("add replicas"
// beside "lower --max-num-seqs").
var causeGraph = map[string][]string{ // symptom → its possible causes
	"queue_backlog":   {"engine_stalled", "kv_cache_thrashing", "swapping", "kv_cache_saturated", "prefill_starvation", "gpu_throttling"},
	"slo_breach":      {"engine_stalled", "kv_cache_thrashing", "swapping", "kv_cache_saturated", "prefill_starvation", "gpu_throttling"},
	"high_abort_rate": {"engine_stalled", "kv_cache_thrashing", "swapping", "kv_cache_saturated", "prefill_starvation", "gpu_throttling"},
	"decode_stutter":  {"kv_cache_thrashing", "swapping", "gpu_throttling"},
}

// ID names a finding uniquely within a frame: rule@target, with the model,
// data-parallel engine and GPUs when it is about them.
func (fd *Finding) ID() string {
	var b strings.Builder
	b.WriteString(fd.Rule)
	b.WriteByte('@')
	b.WriteString(fd.Target)
	if fd.Model != "" {
		b.WriteString("/" + fd.Model)
	}
	if fd.Engine != "" {
		b.WriteString("#" + fd.Engine)
	}
	for _, g := range fd.GPUs {
		b.WriteString(":gpu" + strconv.Itoa(g))
	}
	return b.String()
}

// Group is one rule firing on several endpoints: one fleet-wide problem
// rather than many. Members are the findings' IDs.
type Group struct {
	Rule     string
	Title    string
	Severity Severity
	Targets  []string
	Members  []string
}

// groupFindings applies the cause graph on every endpoint, carries the
// result into the frame's list, and forms the fleet groups.
func groupFindings(f *Frame) {
	changed := map[string]Finding{}
	for i := range f.Endpoints {
		ep := &f.Endpoints[i]
		touched := map[int]bool{}
		for j := range ep.Findings {
			s := &ep.Findings[j]
			causes := causeGraph[s.Rule]
			if len(causes) == 0 || s.State != FindingFiring {
				continue
			}
			var cause *Finding
			for k := range ep.Findings {
				c := &ep.Findings[k]
				if c.State == FindingFiring && slices.Contains(causes, c.Rule) && (cause == nil || c.Severity > cause.Severity) {
					cause = c
				}
			}
			if cause == nil {
				continue
			}
			s.Cause = cause.ID()
			s.Severity = cause.Severity
			s.Action = "follow the cause: " + cause.Title + " (" + cause.Rule + ")"
			s.Flags = nil
			touched[j] = true
			if id := s.ID(); !slices.Contains(cause.Symptoms, id) {
				cause.Symptoms = append(cause.Symptoms, id)
				for k := range ep.Findings {
					if &ep.Findings[k] == cause {
						touched[k] = true
					}
				}
			}
		}
		// Copies, taken before the sort moves the findings.
		for k := range touched {
			if k >= 0 {
				changed[ep.Findings[k].ID()] = ep.Findings[k]
			}
		}
		if len(touched) > 0 {
			SortFindings(ep.Findings)
		}
	}
	if len(changed) > 0 {
		for i := range f.Findings {
			fd := &f.Findings[i]
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
			}
		}
		SortFindings(f.Findings)
	}
	f.Groups = fleetGroups(f.Findings)
}

// fleetGroups gathers firing findings of one rule on two or more
// endpoints (symptoms grouped under a cause count with their cause).
func fleetGroups(fs []Finding) []Group {
	var out []Group
	for i := range fs {
		fd := &fs[i]
		if fd.State != FindingFiring || fd.Cause != "" || len(fd.GPUs) > 0 || fd.Rule == "replica_imbalance" {
			continue
		}
		k := slices.IndexFunc(out, func(g Group) bool { return g.Rule == fd.Rule })
		if k < 0 {
			out = append(out, Group{Rule: fd.Rule, Title: fd.Title})
			k = len(out) - 1
		}
		g := &out[k]
		g.Severity = max(g.Severity, fd.Severity)
		if !slices.Contains(g.Targets, fd.Target) {
			g.Targets = append(g.Targets, fd.Target)
		}
		g.Members = append(g.Members, fd.ID())
	}
	return slices.DeleteFunc(out, func(g Group) bool { return len(g.Targets) < 2 })
}
