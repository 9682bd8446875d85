package detect

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/dcgm"
)

// What changed, and when: the engine's shifts (diagnose/shift.go), told
// apart as a change of traffic or a change of capacity. A capacity signal
// that moves with the traffic (a longer prompt slows every step) is the
// traffic's doing: only one that moves alone is a fault.

// shift parameters, looked up by name: a check indexes its values through
// these.
var (
	shParams = params{
		{"tie", 30, "s", "a capacity change this close to a change of traffic is the traffic's doing"},
	}
	shTie = shParams.index("tie")
)

var ruleWorkloadShift = &Rule{
	ID: "workload_shift", Title: "Workload changed", Scope: ScopeEndpoint,
	Catches:  "What clients send changed against its baseline: the arrival rate, prompt or answer lengths, the prefix-cache hit rate, the abort share. The first question of an incident call: what changed, by how much, and when.",
	Needs:    "request counters and the prompt/generation length histograms, one observation a scrape",
	Cond:     "a workload signal moved from its baseline by its least change and held (arrivals, prompt tokens/s: ×1.8 for 45 s; prompt and output means: ×1.6 for 20 s; prefix hit rate 20 points, abort share 15 points, for 30 s); not counted: the abort share rising while requests wait past a client's patience (30 s) all window, and the output mean moving with it or by no more than the abort share explains (clients giving up, not changing what they send)",
	Clear:    "every changed workload signal is back near its baseline, or has been the new level for 10 minutes",
	Severity: "info: a traffic question, not a fault",
	Action:   "find the client or feature that changed and when (the onset); size the deployment for the new traffic or route it separately; a rise of arrivals up to a minute after peers of the pool left the fleet or went down is their traffic moving here: a capacity question (bring them back, or size the rest for it)",
	For:      0, ResolveFor: 30 * time.Second,
	Params: shParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		lead := firstOpen(trafficShifts(u), diagnose.ShiftWorkload)
		if lead == nil {
			return condClear, 0
		}
		x.since = lead.Onset
		return condMet, diagnose.SevInfo
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		ss := trafficShifts(u)
		lead := firstOpen(ss, diagnose.ShiftWorkload)
		if lead = orLatest(ss, lead, diagnose.ShiftWorkload); lead == nil {
			fd.Summary = plain("the workload is back at its baseline")
			return
		}
		fd.Summary, fd.Evidence = shiftWords(ss, lead, seconds(p[shTie]))
		if gone, at := peersGone(x, u.ep, lead); len(gone) > 0 {
			// More arrivals here when peers of the pool left: the
			// router moved their traffic, no client changed.
			names, lost := diagnose.Str(strings.Join(gone, ", ")), say("%d replicas", len(gone))
			if len(gone) == 1 {
				lost = plain("a replica")
			}
			fd.Summary = fd.Summary.Add("; when %d of its peers (%s) left or went down at %s", len(gone), names, clock(at))
			fd.Explain = say("This endpoint receives more requests since %s, when its pool lost %s (left the fleet or went down): the router sends their traffic to the rest. No client changed what it sends.", clock(at), lost)
			fd.Action = say("a capacity question, not the clients: the pool lost %s at %s (%s); bring it back, or size the rest for its traffic", lost, clock(at), names)
			return
		}
		fd.Explain = say("The traffic this endpoint serves is not what it was: %s moved first. Latency and queueing that follow are the server meeting different work, not a fault; a flag sized for the old traffic may be wrong for the new.", lead.Name)
		fd.Action = say("a traffic question: find the client or feature that changed at %s (%s%s); size the deployment for it or route it separately", clock(lead.Onset), lead.Name, lead.FactorBare())
		if rise, aborted, ok := retriesMayFeed(ss); ok {
			// Clients that give up and send again: the rise is partly
			// the aborts coming back, and it grows as latency does.
			fd.Summary = fd.Summary.Add("; up to %s/s of the %s/s more arrivals may be retries (%s/s are aborted)", num(min(rise, aborted)), num(rise), num(aborted))
			fd.Explain = fd.Explain.Cat(plain(" Most finished requests are aborted now: clients that give up and send the request again add arrivals that no new user made, and more as latency grows."))
			fd.Action = say("a traffic question, fed by retries: find the client that changed at %s and its timeout and retry policy; %s/s aborted against %s/s more arrivals: retries without backoff multiply the load; cut latency below the clients' timeout or make them back off", clock(lead.Onset), num(aborted), num(rise))
		}
	},
	prom: func(g *promGen, p []float64) []promAlert {
		// Prompt tokens/s over 5 minutes against the hour before: the
		// nearest a rule without state gets to a baseline.
		now := rateOver(sources.CPromptTokens, byEndpoint, "5m", "")
		before := rateOver(sources.CPromptTokens, byEndpoint, "1h", "5m")
		return []promAlert{{Severity: "info", Expr: fmt.Sprintf("(%s) / (%s) > 1.8 or (%s) / (%s) < 1/1.8", now, before, now, before)}}
	},
}

var ruleCapacityShift = &Rule{
	ID: "capacity_shift", Title: "Capacity changed", Scope: ScopeEndpoint,
	Catches:  "The engine can do less than its baseline: the SM clock of its own GPUs, while busy, fell with no change of workload around it. A fault, not a traffic question: thermal or power throttling, a hardware slowdown, a lowered clock or power limit.",
	Needs:    "the endpoint's own GPUs (NVML, or dcgm-exporter joined by pod or by a host serving it alone), one reading a scrape",
	Cond:     "the slowest busy GPU's SM clock moved ×1.25 from its baseline for 20 s with no workload change within {tie} of its onset",
	Clear:    "the clock is back near its baseline, or has been the new level for 10 minutes",
	Severity: "warning",
	Action:   "a fault: check the GPU (nvidia-smi -q -d PERFORMANCE,TEMPERATURE: clocks and throttle reasons), other processes on it, and whether the engine restarted with other flags",
	For:      0, ResolveFor: 30 * time.Second,
	Params: shParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		c := loneCapacity(u.ep.Shifts, seconds(p[shTie]))
		if c == nil {
			return condClear, 0
		}
		x.since = c.Onset
		return condMet, diagnose.SevWarning
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		c := loneCapacity(u.ep.Shifts, seconds(p[shTie]))
		if c = orLatest(u.ep.Shifts, c, diagnose.ShiftCapacity); c == nil {
			fd.Summary = plain("the engine's speed is back at its baseline")
			return
		}
		fd.Summary, fd.Evidence = shiftWords(u.ep.Shifts, c, seconds(p[shTie]))
		fd.Summary = fd.Summary.Cat(plain(", with no change of traffic"))
		fd.Explain = say("The same traffic gets less service than before: %s moved while arrivals, prompt and answer lengths held. The GPU itself slowed: every step takes longer, whatever vLLM's flags.", c.Name)
		fd.Action = say("a fault since %s: check the GPU (nvidia-smi -q -d PERFORMANCE,TEMPERATURE: clocks and throttle reasons), other processes on it, and whether the engine restarted with other flags", clock(c.Onset))
	},
	prom: func(g *promGen, p []float64) []promAlert {
		// dcgm-exporter's SM clock against the hour before, on busy GPUs.
		c, u := dcgm.SMClockName, dcgm.UtilName
		return []promAlert{{Severity: "warning", Expr: fmt.Sprintf("%s < avg_over_time(%s[1h] offset 5m) / 1.25 and on(Hostname, gpu) %s >= 20", c, c, u)}}
	},
}

// rateOver is the rate of a counter's aliases over w, offset by off
// ("" none).
func rateOver(id sources.Counter, by, w, off string) string {
	if off != "" {
		off = " offset " + off
	}
	return alt(sources.FamilyNames(sources.RoleCounter, uint8(id)), func(n string) string {
		return fmt.Sprintf("sum by (%s) (rate(%s_total[%s]%s))", by, n, w, off)
	})
}

// trafficShifts is the endpoint's shifts less the workload signals that
// moved by the server's doing, not the clients' (the shifts themselves
// are kept: the timeline says what the numbers did):
//   - answers cut off at a limit, and the output mean rising with them,
//     where the model stopped ending its answers (runawayShift);
//   - the abort share rising while requests wait past a client's patience
//     the whole window: clients give up in the queue (the queue backlog
//     and abort findings say so), they did not change what they send;
//     and the output mean moving with it: aborted requests end early, and
//     of the rest only those short enough to end before the clients'
//     timeout complete at all;
//   - elsewhere, the output mean moving with the abort share, by no more than the
//     aborts explain: an aborted request ends early, so finished requests'
//     mean output M with a share a aborted bounds the completed ones'
//     between M and M ÷ (1 − a); ranges that overlap before and after
//     leave no evidence the answers clients asked for changed.
func trafficShifts(u *unit) []diagnose.Shift {
	ss := u.ep.Shifts
	var aborts *diagnose.Shift
	for i := range ss {
		if ss[i].Signal == diagnose.SigAbort && ss[i].Ended.IsZero() {
			aborts = &ss[i]
		}
	}
	queued := givingUpWait(u.st, &u.ep.Trend)
	// Answers run to their limit: the model's doing (runaway_answers).
	run := runawayShift(ss) != nil
	// The endpoint's own slice unless a shift is left out: checked every
	// evaluation on every endpoint, most with nothing to leave out.
	var out []diagnose.Shift
	for i, s := range ss {
		switch {
		case s.Signal == diagnose.SigAbort && s.After > s.Before && queued,
			run && (s.Signal == diagnose.SigCut || s.Signal == diagnose.SigGenLen && s.After > s.Before),
			s.Signal == diagnose.SigGenLen && (queued && aborts != nil && aborts.After > aborts.Before || abortsExplain(s, aborts, u.st.AbortShare)):
			if out == nil {
				out = append(make([]diagnose.Shift, 0, len(ss)-1), ss[:i]...)
			}
		default:
			if out != nil {
				out = append(out, s)
			}
		}
	}
	if out == nil {
		return ss
	}
	return out
}

// givingUpWait: requests waited the whole window and the queue time p95
// is past a client's patience, whatever share gave up yet.
func givingUpWait(st *diagnose.Stats, tr *diagnose.Trend) bool {
	return !bad(tr.WaitMin) && tr.WaitMin >= 1 && st.Queue.Count >= minObs && !bad(st.Queue.P95) && st.Queue.P95 >= patience.Seconds()
}

// abortsExplain says a change of the output mean lies within what the
// abort share's own change (or, without one, its level now) explains.
func abortsExplain(s diagnose.Shift, aborts *diagnose.Shift, share float64) bool {
	before, after := share, share
	if aborts != nil {
		before, after = aborts.Before, aborts.After
	}
	if bad(before) || bad(after) || before >= 1 || after >= 1 || !(s.Before > 0) || !(s.After > 0) {
		return false
	}
	// Completed answers' mean: at least the finished mean (aborts end
	// early), at most all of it over the completed share.
	loB, hiB := s.Before, s.Before/(1-before)
	loA, hiA := s.After, s.After/(1-after)
	return loB <= hiA && loA <= hiB
}

// firstOpen is the earliest open shift of the kind, nil when none.
func firstOpen(ss []diagnose.Shift, k diagnose.ShiftKind) *diagnose.Shift {
	var first *diagnose.Shift
	for i := range ss {
		s := &ss[i]
		if s.Kind == k && s.Ended.IsZero() && (first == nil || s.Onset.Before(first.Onset)) {
			first = s
		}
	}
	return first
}

// orLatest is s, or when nil (a finding resolving: its change ended) the
// latest shift of the kind, nil when none is left.
func orLatest(ss []diagnose.Shift, s *diagnose.Shift, k diagnose.ShiftKind) *diagnose.Shift {
	if s != nil {
		return s
	}
	for i := len(ss) - 1; i >= 0; i-- {
		if ss[i].Kind == k {
			return &ss[i]
		}
	}
	return nil
}

// retriesMayFeed says a rise of arrivals came with a rise of the abort
// share whose aborted requests per second are at least half the rise:
// clients retrying what they gave up on can account for it. It returns
// the rise and the aborted rate, req/s.
func retriesMayFeed(ss []diagnose.Shift) (rise, aborted float64, ok bool) {
	var arr, ab *diagnose.Shift
	for i := range ss {
		s := &ss[i]
		if !s.Ended.IsZero() || !(s.After > s.Before) {
			continue
		}
		switch s.Signal {
		case diagnose.SigArrivals:
			arr = s
		case diagnose.SigAbort:
			ab = s
		}
	}
	if arr == nil || ab == nil {
		return 0, 0, false
	}
	// Every arrival finishes or waits: at a level, the finished rate is
	// the arrival rate, and the aborted the abort share of it.
	rise, aborted = arr.After-arr.Before, ab.After*arr.After
	return rise, aborted, aborted >= rise/2
}

// peerGone bounds how far a peer's departure may be from a rise of
// arrivals for the rise to be its traffic moving: the router stops
// sending to a replica that left or fails its health check within
// seconds, and the rise's onset is dated within a few scrapes.
const (
	peerGoneBefore = time.Minute
	peerGoneAfter  = 15 * time.Second
)

// peersGone is the replicas of ep's model that left the fleet or went
// down near the onset of lead, when lead is a rise of arrivals or prompt
// tokens/s, and when the first of them went; none otherwise.
func peersGone(x *evalCtx, ep *diagnose.EndpointView, lead *diagnose.Shift) ([]string, time.Time) {
	model := soleModel(ep)
	if model == "" || !(lead.Signal == diagnose.SigArrivals || lead.Signal == diagnose.SigPromptTok) || !(lead.After > lead.Before) {
		return nil, time.Time{}
	}
	near := func(t time.Time) bool {
		return !t.IsZero() && !t.Before(lead.Onset.Add(-peerGoneBefore)) && !t.After(lead.Onset.Add(peerGoneAfter))
	}
	var names []string
	var first time.Time
	add := func(name string, at time.Time) {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	for _, r := range x.f.Roster {
		if !r.Joined && r.Last != nil && r.Name != ep.Name && slices.Contains(r.Last.Models, model) && near(r.At) {
			add(r.Name, r.At)
		}
	}
	for i := range x.f.Endpoints {
		e := &x.f.Endpoints[i]
		if e.Name != ep.Name && isDown(e.State) && slices.Contains(e.Models, model) && near(e.Since) {
			add(e.Name, e.Since)
		}
	}
	slices.Sort(names)
	return names, first
}

// loneCapacity is the earliest open capacity shift with no workload shift
// (open or ended) whose onset is within tie of its own.
func loneCapacity(ss []diagnose.Shift, tie time.Duration) *diagnose.Shift {
	var first *diagnose.Shift
	for i := range ss {
		s := &ss[i]
		if s.Kind != diagnose.ShiftCapacity || !s.Ended.IsZero() {
			continue
		}
		traffic := false
		for _, w := range ss {
			if w.Kind == diagnose.ShiftWorkload && absDur(w.Onset.Sub(s.Onset)) <= tie {
				traffic = true
			}
		}
		if !traffic && (first == nil || s.Onset.Before(first.Onset)) {
			first = s
		}
	}
	return first
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// shiftWords says what moved first and when, then what moved with it (the
// open shifts of the same kind, and the latency that followed, each with
// its own time): "since 14:02:01 prompt tokens/s 3.6k → 17k (×4.8);
// prompt mean 1.1k → 5.8k tokens (×5.4) at 14:02:06; TTFT p95 70ms →
// 24s (×340) at 14:02:03".
func shiftWords(ss []diagnose.Shift, lead *diagnose.Shift, tie time.Duration) (diagnose.Text, []diagnose.Evidence) {
	parts := []diagnose.Text{say("since %s %s", clock(lead.Onset), lead.Words())}
	evs := shiftEvidence(nil, lead)
	var same, felt []*diagnose.Shift
	for i := range ss {
		s := &ss[i]
		if s == lead || (!s.Ended.IsZero() && lead.Ended.IsZero()) || s.Onset.Before(lead.Onset.Add(-tie)) {
			continue
		}
		switch {
		case s.Kind == lead.Kind:
			same = append(same, s)
		case s.Kind == diagnose.ShiftSymptom:
			felt = append(felt, s)
		default:
			continue
		}
		evs = shiftEvidence(evs, s)
	}
	byOnset := func(a, b *diagnose.Shift) int { return a.Onset.Compare(b.Onset) }
	slices.SortStableFunc(same, byOnset)
	slices.SortStableFunc(felt, byOnset)
	// The line stays readable: two more of the same kind, and the latency
	// users feel; the rest is in the evidence.
	for _, s := range same[:min(len(same), 2)] {
		parts = append(parts, say("%s at %s", s.Words(), clock(s.Onset)))
	}
	for _, s := range felt {
		if s.Signal == diagnose.SigTTFT || s.Signal == diagnose.SigITL {
			parts = append(parts, say("%s at %s", s.Words(), clock(s.Onset)))
		}
	}
	return diagnose.Join(parts, "; "), evs
}

func shiftEvidence(evs []diagnose.Evidence, s *diagnose.Shift) []diagnose.Evidence {
	return append(evs, evNum(s.Name+" before", s.Before, s.Unit, 0), evNum(s.Name+" since the change", s.After, s.Unit, 0),
		ev(s.Name+" changed at", s.Onset.UTC().Format(time.RFC3339), 0))
}

// clock is a time of day as findings say it.
func clock(t time.Time) string { return t.UTC().Format("15:04:05") }
