package detect

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// Symptoms on an endpoint with a firing cause are grouped under it: their
// severity (and the exit status) follows the cause, their action defers to
// it; the same cause on several endpoints is one fleet group.
func TestCausesOverSymptoms(t *testing.T) {
	sat := healthyStats()
	// KV pinned with a queue (a warning: fewer wait than run), no
	// preemption counter; the queue is 8 s deep and TTFT 4 s (an SLO
	// breach that alone would be critical at 8× the 500ms target).
	sat.KVUsage, sat.KVUsageMax, sat.Running, sat.Waiting, sat.PreemptionsRate = 0.97, 0.97, 150, 60, nan
	sat.Queue, sat.TTFT = qs(4, 8, 9, 300), qs(2, 4, 6, 300)
	w := newWorld(t, chatCfg(), upEndpoint("a", sat), upEndpoint("b", sat), upEndpoint("c", healthyStats()))
	frames := w.run(t0, 6*time.Minute, 5*time.Second, nil)
	f := frames[len(frames)-1]
	cause := findingOf(f, "kv_cache_saturated")
	backlog := findingOf(f, "queue_backlog")
	slo := findingOf(f, "slo_breach")
	// slo_breach is superseded by queue_backlog (the more specific
	// symptom) and not shown.
	if cause == nil || backlog == nil || slo != nil {
		t.Fatalf("findings %+v", f.Findings)
	}
	if cause.Severity != diagnose.SevWarning || backlog.Cause != cause.ID() {
		t.Errorf("not grouped: cause %s %v, backlog cause %q", cause.ID(), cause.Severity, backlog.Cause)
	}
	// The backlog's severity is the cause's.
	if backlog.Severity != diagnose.SevWarning {
		t.Errorf("symptom severity does not follow the cause: backlog %v", backlog.Severity)
	}
	if !strings.HasPrefix(txt(backlog.Action), "follow the cause: KV cache saturated") || len(backlog.Flags) != 0 {
		t.Errorf("backlog keeps its own action %q %+v", txt(backlog.Action), backlog.Flags)
	}
	if len(cause.Symptoms) != 1 {
		t.Errorf("cause symptoms %v", cause.Symptoms)
	}
	if w, _ := Worst(f.Findings); w != diagnose.SevWarning {
		t.Errorf("exit status from a symptom: worst %v", w)
	}
	var g *diagnose.Group
	for i := range f.Groups {
		if f.Groups[i].Rule == "kv_cache_saturated" {
			g = &f.Groups[i]
		}
	}
	if g == nil || len(g.Members) != 2 || strings.Join(g.Targets, ",") != "a,b" {
		t.Errorf("fleet group %+v", f.Groups)
	}
	for _, g := range f.Groups {
		if g.Rule == "queue_backlog" || g.Rule == "slo_breach" {
			t.Errorf("grouped symptoms form their own fleet group: %+v", g)
		}
	}
	// Without a cause (KV with room, first tokens on time, so no
	// starvation either), the same backlog stands alone with its own action.
	free := sat
	free.KVUsage, free.KVUsageMax, free.TTFT = 0.5, 0.5, healthyStats().TTFT
	w = newWorld(t, chatCfg(), upEndpoint("a", free))
	f = w.run(t0, 6*time.Minute, 5*time.Second, nil)[72]
	if b := findingOf(f, "queue_backlog"); b == nil || b.Cause != "" || strings.HasPrefix(txt(b.Action), "follow the cause") {
		t.Errorf("lone backlog %+v", b)
	}
	// An SLO breach that alone is critical (TTFT p95 4 s, 8× the target)
	// under a warning cause: the exit status is the cause's warning.
	few := sat
	few.Waiting, few.Queue = 3, qs(0.1, 0.3, 0.5, 300)
	w = newWorld(t, chatCfg(), upEndpoint("a", few))
	f = w.run(t0, 6*time.Minute, 5*time.Second, nil)[72]
	slo = findingOf(f, "slo_breach")
	if slo == nil || slo.Severity != diagnose.SevWarning || !strings.HasPrefix(slo.Cause, "kv_cache_saturated@a") {
		t.Errorf("slo breach %+v / %+v", slo, f.Findings)
	}
	if w, _ := Worst(f.Findings); w != diagnose.SevWarning {
		t.Errorf("worst %v", w)
	}
}

// replica_imbalance compares load per unit of capacity, within the
// configured pool.
func TestImbalanceByCapacityAndPool(t *testing.T) {
	big, small := healthyStats(), healthyStats()
	big.Running, big.Waiting = 50, 10 // 60 in flight over 256 slots: 0.23
	small.Running = 20                // 20 over 64 slots: 0.31
	a, b, c := upEndpoint("big", big), upEndpoint("s1", small), upEndpoint("s2", small)
	a.MaxNumSeqs, b.MaxNumSeqs, c.MaxNumSeqs = 256, 64, 64
	w := newWorld(t, chatCfg(), a, b, c)
	if _, fd := firstFiring(w.run(t0, 5*time.Minute, 5*time.Second, nil), "replica_imbalance"); fd != nil {
		t.Errorf("a bigger replica carrying more fired: %s", txt(fd.Summary))
	}
	// Without capacities (3× the requests per engine) it is imbalance.
	a.MaxNumSeqs, b.MaxNumSeqs, c.MaxNumSeqs = 0, 0, 0
	w = newWorld(t, chatCfg(), a, b, c)
	if _, fd := firstFiring(w.run(t0, 5*time.Minute, 5*time.Second, nil), "replica_imbalance"); fd == nil || fd.Target != "big" {
		t.Errorf("per engine: %+v", fd)
	}
	// Pools: big alone in its pool has no peers.
	a.Pool, b.Pool, c.Pool = "west", "east", "east"
	w = newWorld(t, chatCfg(), a, b, c)
	if _, fd := firstFiring(w.run(t0, 5*time.Minute, 5*time.Second, nil), "replica_imbalance"); fd != nil {
		t.Errorf("compared across pools: %s", txt(fd.Summary))
	}
}

// Grouping never duplicates or drops a finding when the endpoint's list
// is re-sorted (a cause critical, its symptoms raised to critical beside
// it): each finding once, the cause with both symptoms.
func TestGroupingKeepsEveryFindingOnce(t *testing.T) {
	st := healthyStats()
	thrashing(&st)
	st.Queue, st.ITL = qs(4, 8, 9, 300), qs(0.03, 0.12, 0.3, 50000)
	w := newWorld(t, chatCfg(), upEndpoint("r", st))
	for _, f := range w.run(t0, 4*time.Minute, 5*time.Second, nil) {
		seen := map[string]int{}
		for _, fd := range f.Findings {
			seen[fd.ID()]++
		}
		for id, n := range seen {
			if n > 1 {
				t.Fatalf("%v: %s listed %d times: %v", f.Time.Sub(t0), id, n, seen)
			}
		}
		if len(f.Findings) != len(f.Endpoints[0].Findings) {
			t.Fatalf("%v: frame %d findings, endpoint %d", f.Time.Sub(t0), len(f.Findings), len(f.Endpoints[0].Findings))
		}
	}
	f := w.frame(t0.Add(4*time.Minute + time.Second))
	c := findingOf(f, "kv_cache_thrashing")
	if c == nil || len(c.Symptoms) != 2 || findingOf(f, "queue_backlog").Cause != c.ID() || findingOf(f, "decode_stutter").Cause != c.ID() {
		t.Errorf("grouping %+v", f.Findings)
	}
}

// Opening on a server already saturated: within seconds both the cause and
// its symptom are pending, and the cause already heads the symptom (listed
// first, its action deferred), so the first screen never says "add
// replicas" beside "lower --max-num-seqs".
func TestPendingCauseClaimsSymptoms(t *testing.T) {
	sat := healthyStats()
	sat.KVUsage, sat.KVUsageMax, sat.Running, sat.Waiting, sat.PreemptionsRate = 0.97, 0.97, 150, 60, nan
	sat.Queue, sat.TTFT = qs(4, 8, 9, 300), qs(2, 4, 6, 300)
	w := newWorld(t, chatCfg(), upEndpoint("a", sat))
	frames := w.run(t0, 10*time.Second, 5*time.Second, nil)
	f := frames[len(frames)-1]
	var cause, backlog *diagnose.Finding
	for i := range f.Pending {
		switch f.Pending[i].Rule {
		case "kv_cache_saturated":
			cause = &f.Pending[i]
		case "queue_backlog":
			backlog = &f.Pending[i]
		}
	}
	if cause == nil || backlog == nil {
		t.Fatalf("pending %+v, firing %+v", f.Pending, f.Findings)
	}
	if backlog.Cause != cause.ID() || !strings.HasPrefix(txt(backlog.Action), "follow the cause: KV cache saturated") || len(backlog.Flags) != 0 {
		t.Errorf("pending backlog not under its pending cause: cause %q action %q flags %+v", backlog.Cause, txt(backlog.Action), backlog.Flags)
	}
	if len(cause.Symptoms) != 1 || cause.Symptoms[0] != backlog.ID() {
		t.Errorf("cause symptoms %v", cause.Symptoms)
	}
	ep := f.Endpoints[0].Pending
	if len(ep) == 0 || ep[0].Rule != "kv_cache_saturated" {
		t.Errorf("the endpoint's first pending finding is not the cause: %+v", ep)
	}
	if len(f.Findings) != 0 {
		if wst, _ := Worst(f.Findings); wst > diagnose.SevInfo {
			t.Errorf("a pending cause set the exit status: %+v", f.Findings)
		}
	}
}

// A fleet group is one rule and one title: binding_limit's limits differ
// by endpoint and are not one group.
func TestFleetGroupsKeepTitlesApart(t *testing.T) {
	fire := func(target, title string) diagnose.Finding {
		return diagnose.Finding{Rule: "binding_limit", Title: title, Target: target, State: diagnose.FindingFiring, Severity: diagnose.SevWarning}
	}
	gs := fleetGroups([]diagnose.Finding{fire("a", "KV transfer binds"), fire("b", "Speculative decoding binds"), fire("c", "KV transfer binds")})
	if len(gs) != 1 || gs[0].Title != "KV transfer binds" || strings.Join(gs[0].Targets, ",") != "a,c" {
		t.Errorf("groups %+v", gs)
	}
}

// A fleet group shows one member's action, so its members turn the same
// lever first: a thrashing cache whose drafts bind is told to turn them
// off, and is not grouped under a neighbour's "--max-num-seqs → 32"
// (a fleet's "KV cache thrashing ×2" hid the drafts' advice).
func TestFleetGroupsKeepLeversApart(t *testing.T) {
	fire := func(target, flag string) diagnose.Finding {
		return diagnose.Finding{Rule: "kv_cache_thrashing", Title: "KV cache thrashing", Target: target, State: diagnose.FindingFiring,
			Severity: diagnose.SevCritical, Flags: []diagnose.FlagChange{{Flag: flag}}}
	}
	gs := fleetGroups([]diagnose.Finding{fire("a", "--max-num-seqs"), fire("b", "--speculative-config num_speculative_tokens"), fire("c", "--max-num-seqs")})
	if len(gs) != 1 || strings.Join(gs[0].Targets, ",") != "a,c" {
		t.Errorf("groups %+v", gs)
	}
}
