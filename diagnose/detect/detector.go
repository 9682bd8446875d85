package detect

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// Detector runs the rules over frames and keeps what they need between
// frames: per rule and unit the pending/firing state (a condition must
// hold for the rule's for before it fires and its clear condition must hold
// for resolve_for before it resolves, so findings do not flap), and per
// endpoint the memory a stateful rule declares (see ruleMemory). Time comes from the
// frame. It is not safe for concurrent use: the goroutine that assembles
// frames evaluates them.
type Detector struct {
	rules  []ActiveRule
	slo    diagnose.SLO
	forCap time.Duration
	// states is the one state table: every scope's units (an engine, an
	// endpoint, a target, a fleet member, a GPU) keyed by (rule, unit),
	// created, advanced and fired by one loop and swept by one policy
	// (see Evaluate).
	states map[stateKey]*ruleState
	// nstates counts each rule's states in the table: a rule with none and a
	// condition that does not hold needs no lookup (most rules, most polls).
	nstates []int
	eps     []*epState // per endpoint, the rules' memories
	// oneScrape is, by endpoint, a limit named from one scrape's gauges
	// before the window has the points to judge (keepOneScrape).
	oneScrape map[string]diagnose.Verdict
	// prev is each endpoint's last verdict, for the verdicts whose
	// threshold to stay is lower than the one to be named (hysteresis).
	prev map[string]verdictMemo
	gen  uint32
	// live marks, per endpoint and rule, a state that fires (and does not
	// resolve) or is shown pending this evaluation: what supersession reads.
	live   map[liveKey]liveMark
	supers [][]int // per rule, the indexes of the rules that restate it (the cause graph)
	under  [][]int // per rule, the indexes of the rules it restates (the causes among them lend it their severity)
	// shownTo is, per endpoint and flag, the number a recommendation was
	// last shown with (steadyFlags).
	shownTo map[string]map[string]shownFlag
	// stateful are the indexes of the rules that declare a memory.
	stateful []int
	kv       diagnose.KVBands // the KV colour bands of the active thresholds
	scratch  diagnose.Finding // the finding describe builds (see there)
}

// unitKey names one unit whatever its scope: an endpoint (target), one
// (model, engine) of it, a fleet member (target and model), or a GPU
// (target empty; gpu is its device index, with its UUID when known).
type unitKey struct {
	target        string
	model, engine string
	gpu           int
	uuid          string
}

// stateKey names one rule's state on one unit.
type stateKey struct {
	rule int
	unit unitKey
}

type liveKey struct {
	target string
	rule   int
}

// liveMark is the evaluation that last saw a rule firing (resolving
// included: a resolving cause still stands in for the rules it restates
// until its resolve_for decides), or shown pending, on an endpoint; and
// the last that saw its condition hold (firing and not resolving, or
// pending, shown or not) with the severity it held at.
type liveMark struct {
	firing, pending, holds uint32
	sev                    diagnose.Severity
}

// epState is what the detector keeps per endpoint beyond the state table:
// the memories of the rules that declare one.
type epState struct {
	name string
	mem  []ruleMemory // by rule index; nil for a rule that keeps none
}

// NewDetector returns a detector with cfg applied to the rule table.
func NewDetector(cfg RulesConfig) (*Detector, error) {
	rules, err := cfg.Active()
	if err != nil {
		return nil, err
	}
	slo := cfg.SLO
	if slo.Name == "" {
		slo = diagnose.SLOProfiles()[0]
	}
	d := &Detector{rules: rules, slo: slo, forCap: cfg.ForCap, states: map[stateKey]*ruleState{},
		live: map[liveKey]liveMark{}, supers: make([][]int, len(rules)), under: make([][]int, len(rules)),
		shownTo: map[string]map[string]shownFlag{}, nstates: make([]int, len(rules)), oneScrape: map[string]diagnose.Verdict{}, prev: map[string]verdictMemo{}}
	for i, r := range rules {
		if r.memory != nil {
			d.stateful = append(d.stateful, i)
		}
		for _, c := range causeGraph[r.ID] {
			if !c.restates {
				continue
			}
			for j := range rules {
				if rules[j].ID == c.cause {
					d.supers[i] = append(d.supers[i], j)
					if len(groupingCauses(r.ID)) == 0 {
						// Only a cause lends its severity: a symptom (an
						// SLO breach, a queue) takes its cause's.
						d.under[j] = append(d.under[j], i)
					}
				}
			}
		}
	}
	d.kv = KVBandsOf(rules)
	return d, nil
}

// SetForCap caps every rule's for duration (0: no cap); see RulesConfig.ForCap.
func (d *Detector) SetForCap(c time.Duration) { d.forCap = c }

// Rules returns the active rules (configuration applied).
func (d *Detector) Rules() []ActiveRule { return d.rules }

// SLO returns the profile the latency rules measure against.
func (d *Detector) SLO() diagnose.SLO { return d.slo }

// SetSLO switches the profile the latency rules measure against (the TUI's
// profile key), so findings and the latency row judge by the same targets.
func (d *Detector) SetSLO(s diagnose.SLO) { d.slo = s }

// unit is what one evaluation of a rule looks at: an endpoint's merged
// stats, or one (model, engine) sub-series of it.
type unit struct {
	ep            *diagnose.EndpointView
	st            *diagnose.Stats
	mem           ruleMemory // the rule's memory of the endpoint, when it declares one
	model, engine string
	// GPU rules: the device (slot in Frame.GPU.GPUs, -1 when the reading no
	// longer lists it; gpuIndex is its device index) and who it serves.
	gpu, gpuIndex int
	target        string
	key           unitKey // its row in the state table
}

// evalCtx carries the frame and per-endpoint values computed on demand.
type evalCtx struct {
	f   *diagnose.Frame
	now time.Time
	slo *diagnose.SLO
	// shownTo is the detector's record of the flag values each endpoint
	// shows (read only: steadyFlags records).
	shownTo map[string]map[string]shownFlag
	// since, when a check sets it, backdates a new pending state: the
	// condition is known to have held since then (an outage that began
	// before this evaluation).
	since time.Time
	// over, when a check sets it with condMet, is how far past its
	// threshold the data is (value ÷ threshold): the hold shrinks by it.
	over float64

	// peers are the replicas a fleet finding compares its target with.
	peers []*diagnose.EndpointView
	u     unit
	pool  *poolLoads // the last pool a finding described (rules_fleet.go)
	// pids are the processes the frame's endpoints run, made the first
	// time a rule asks (neighbor.go).
	pids map[int]bool
}

// keepOneScrape keeps a limit that one scrape's gauges proved (LoRA
// adapters waiting with every slot taken) while the window is still too
// short to judge otherwise: a scrape in which an adapter was just swapped
// in read "too few observations" for a second between two namings (seen
// at 4 s on a sim fleet opened three minutes into its incident).
func (d *Detector) keepOneScrape(ep *diagnose.EndpointView, v diagnose.Verdict) diagnose.Verdict {
	prev, held := d.oneScrape[ep.Name]
	switch {
	case v.Limit == diagnose.LimitFewData && held:
		return prev
	case v.Limit == diagnose.LimitLoRASlots && ep.Trend.Points < minPoints:
		d.oneScrape[ep.Name] = v
	case held:
		delete(d.oneScrape, ep.Name)
	}
	return v
}

// Evaluate runs every enabled rule over the frame and attaches the active
// findings, worst first, to the frame and to each endpoint. As in
// Prometheus' alerting rules, one loop creates, advances and fires the
// states of every scope in the one table, and one sweep resolves or drops
// the states no evaluation visited.
func (d *Detector) Evaluate(f *diagnose.Frame) {
	d.Advance(f)
	d.collect(f)
	groupFindings(f)
	poolVerdicts(f)
}

// Advance is Evaluate for a frame nobody reads (--once evaluates every
// interval for the rules' for durations and reads only its last frame):
// the rules' states move exactly as Evaluate moves them, and the findings
// are not listed on the frame. Listing, grouping and the pools' verdicts
// read the states and write only the frame; at 1,000 endpoints they were
// a twelfth of a headless run's allocations (BENCHMARKS.md, issue 23).
func (d *Detector) Advance(f *diagnose.Frame) {
	d.gen++
	f.SLO = d.slo
	f.KVBands = d.kv
	x := &evalCtx{f: f, now: f.Time, slo: &d.slo, shownTo: d.shownTo}
	d.remember(f)
	for i := range f.Endpoints {
		ep := &f.Endpoints[i]
		prev := d.prev[ep.Name]
		ep.Verdict = d.keepOneScrape(ep, classify(x, ep, prev))
		d.prev[ep.Name] = holdShown(&ep.Verdict, prev, f.Time)
		verdictInEngineTerms(&f.Endpoints[i].Verdict, &f.Endpoints[i])
	}
	for ri := range d.rules {
		if d.rules[ri].Enabled {
			d.evalRule(x, ri)
		}
	}
	d.sweep(x, f)
}

// remember feeds every endpoint to the memories of the rules that keep
// one, before any check reads them.
func (d *Detector) remember(f *diagnose.Frame) {
	for i := range f.Endpoints {
		ep := &f.Endpoints[i]
		d.observe(d.endpoint(i, ep.Name), ep, f.Time)
	}
	if len(d.eps) > len(f.Endpoints) {
		d.eps = d.eps[:len(f.Endpoints)]
	}
}

func (d *Detector) endpoint(i int, name string) *epState {
	for len(d.eps) <= i {
		d.eps = append(d.eps, nil)
	}
	es := d.eps[i]
	if es == nil || es.name != name {
		// A target that left shifts the ones after it: their memories
		// follow them by name.
		es = nil
		for _, o := range d.eps {
			if o != nil && o.name == name {
				es = o
				break
			}
		}
		if es == nil {
			es = &epState{name: name, mem: make([]ruleMemory, len(d.rules))}
		}
		d.eps[i] = es
	}
	return es
}

// evalRule evaluates one rule on every unit of its scope.
func (d *Detector) evalRule(x *evalCtx, ri int) {
	r := &d.rules[ri]
	f := x.f
	switch r.Scope {
	case ScopeFleet:
		x.since, x.over = time.Time{}, 0
		for _, h := range r.fleetCheck(x, f, r.Values) {
			x.u = unit{ep: h.ep, st: &h.ep.Stats, model: h.model, key: unitKey{target: h.ep.Name, model: h.model}}
			x.peers, x.over = h.peers, h.over
			d.step(x, ri, &x.u, h.c, h.sev)
			x.peers = nil
		}
	case ScopeGPU:
		d.evalGPUs(x, ri)
	default:
		for i := range f.Endpoints {
			d.evalEndpoint(x, ri, &f.Endpoints[i], d.eps[i])
		}
	}
}

// evalEndpoint evaluates an endpoint-side rule (target, endpoint or engine
// scope) on the units of one endpoint.
func (d *Detector) evalEndpoint(x *evalCtx, ri int, ep *diagnose.EndpointView, es *epState) {
	r := &d.rules[ri]
	switch r.Scope {
	case ScopeTarget:
		// Not polled yet, or unseen behind a failing source: nothing is
		// known about the target itself.
		if ep.State == diagnose.StatePending || ep.Blind {
			return
		}
		d.check(x, ri, ep, es, &ep.Stats, soleModel(ep), "", unitKey{target: ep.Name})
		return
	}
	if !upEngine(ep) {
		return
	}
	if r.Scope == ScopeEngine && len(ep.Subs) > 1 {
		for k := range ep.Subs {
			s := &ep.Subs[k]
			d.check(x, ri, ep, es, &s.Stats, s.Key.Model, s.Key.Engine, unitKey{target: ep.Name, model: s.Key.Model, engine: s.Key.Engine})
		}
		return
	}
	model, engine := soleModel(ep), ""
	if r.Scope == ScopeEngine && len(ep.Subs) == 1 {
		engine = ep.Subs[0].Key.Engine
	}
	d.check(x, ri, ep, es, &ep.Stats, model, engine, unitKey{target: ep.Name, model: model, engine: engine})
}

func upEngine(ep *diagnose.EndpointView) bool {
	return ep.State == diagnose.StateUp && ep.Kind == sources.KindEngine
}

// check runs one rule's check on one endpoint unit and steps its state.
// The unit lives in the context: evaluations never keep it, so it is
// reused rather than allocated per rule and endpoint.
func (d *Detector) check(x *evalCtx, ri int, ep *diagnose.EndpointView, es *epState, st *diagnose.Stats, model, engine string, key unitKey) {
	r := &d.rules[ri]
	x.u = unit{ep: ep, mem: es.mem[ri], st: st, model: model, engine: engine, key: key}
	x.since, x.over = time.Time{}, 0
	c, sev := r.check(x, &x.u, r.Values)
	d.step(x, ri, &x.u, c, sev)
}

func soleModel(ep *diagnose.EndpointView) string {
	if len(ep.Models) == 1 {
		return ep.Models[0]
	}
	return ""
}

// step advances one rule's state on one unit by this evaluation's verdict,
// creating it when the condition first holds and dropping it when the
// state machine is done with it.
func (d *Detector) step(x *evalCtx, ri int, u *unit, c cond, sev diagnose.Severity) {
	if c != condMet && d.nstates[ri] == 0 {
		return
	}
	k := stateKey{rule: ri, unit: u.key}
	st := d.states[k]
	if st == nil {
		if c != condMet {
			return
		}
		st = &ruleState{target: u.key.target}
		d.states[k] = st
		d.nstates[ri]++
	}
	st.gen = d.gen
	if !d.advance(x, st, ri, c, sev, u) {
		delete(d.states, k)
		d.nstates[ri]--
		return
	}
	d.mark(ri, u.key.target, st)
}

// mark records a live state for supersession (endpoint units only: a
// fleet or GPU finding is never superseded nor supersedes).
func (d *Detector) mark(ri int, target string, st *ruleState) {
	if target == "" {
		return
	}
	m := d.live[liveKey{target, ri}]
	switch {
	case st.firing:
		m.firing = d.gen
	case st.shown:
		m.pending = d.gen
	}
	if st.firing && st.clearSince.IsZero() || !st.firing && !st.pendingSince.IsZero() && st.lapseSince.IsZero() {
		if m.holds != d.gen {
			m.sev = 0
		}
		m.holds, m.sev = d.gen, max(m.sev, st.sev)
	}
	d.live[liveKey{target, ri}] = m
}

// generals says whether a cause rule ri restates holds on the endpoint
// (at its last evaluation: rules are evaluated before those they
// restate), whether one of them fires, and the highest severity among
// those that hold: the specific cause shown in their place does not say
// less than they would (thrashing named where preemption was critical
// stays critical while that evidence holds).
func (d *Detector) generals(target string, ri int) (sev diagnose.Severity, firing, holds bool) {
	if target == "" {
		return 0, false, false
	}
	for _, j := range d.under[ri] {
		m := d.live[liveKey{target, j}]
		if m.holds+1 < d.gen || m.holds == 0 {
			continue
		}
		holds, sev = true, max(sev, m.sev)
		if m.firing+1 >= d.gen && m.firing != 0 {
			firing = true
		}
	}
	return sev, firing, holds
}

// sweep is the one policy for the states no evaluation visited: a unit
// still in the frame whose rule did not say (its data went away, the rule
// was disabled) resolves as unknown; a unit gone from the frame (an endpoint
// that is down or left, a device no reading lists) is dropped, its story
// told by the target's or the device's own findings.
func (d *Detector) sweep(x *evalCtx, f *diagnose.Frame) {
	var up, listed map[string]bool
	for k, st := range d.states {
		if st.gen == d.gen {
			continue
		}
		if up == nil {
			up, listed = map[string]bool{}, map[string]bool{}
			for i := range f.Endpoints {
				listed[f.Endpoints[i].Name] = true
				up[f.Endpoints[i].Name] = upEngine(&f.Endpoints[i])
			}
		}
		r := &d.rules[k.rule]
		var gone bool
		switch r.Scope {
		case ScopeGPU:
			gone = true // devices: every listed one is evaluated
		case ScopeTarget, ScopeFleet:
			gone = !listed[k.unit.target]
		default:
			gone = !up[k.unit.target]
		}
		if gone || !d.advance(x, st, k.rule, condUnknown, 0, nil) {
			delete(d.states, k)
			d.nstates[k.rule]--
			continue
		}
		st.gen = d.gen
		d.mark(k.rule, k.unit.target, st)
	}
	for k, m := range d.live {
		if m.firing != d.gen && m.pending != d.gen && m.holds != d.gen {
			delete(d.live, k)
		}
	}
}

// collect gathers the shown findings into the frame and onto the endpoints
// they concern (by name; a GPU finding, onto the endpoints holding the
// device), worst first.
func (d *Detector) collect(f *diagnose.Frame) {
	byName := make(map[string]int, len(f.Endpoints))
	for i := range f.Endpoints {
		byName[f.Endpoints[i].Name] = i
		f.Endpoints[i].Findings, f.Endpoints[i].Pending = nil, nil
	}
	// Sized first, and no closure over a finding: at 1,000 endpoints the
	// lists' growth and a heap copy of each finding were a fifth of the
	// process's allocations (BENCHMARKS.md, issue 23). The endpoints' lists
	// are cut from one array each, sized by a first pass too: appended to
	// one by one they were another twelfth.
	nAll, nPending := 0, 0
	epAll, epPending := make([]int, len(f.Endpoints)), make([]int, len(f.Endpoints))
	d.eachPlace(f, byName, func(st *ruleState, i int) {
		if i < 0 && st.firing {
			nAll++
		} else if i < 0 {
			nPending++
		} else if st.firing {
			epAll[i]++
		} else {
			epPending[i]++
		}
	})
	carve(f.Endpoints, epAll, func(ep *diagnose.EndpointView) *[]diagnose.Finding { return &ep.Findings })
	carve(f.Endpoints, epPending, func(ep *diagnose.EndpointView) *[]diagnose.Finding { return &ep.Pending })
	all, pending := make([]diagnose.Finding, 0, nAll), make([]diagnose.Finding, 0, nPending)
	d.eachPlace(f, byName, func(st *ruleState, i int) {
		switch {
		case i < 0 && st.firing:
			all = append(all, st.finding)
		case i < 0:
			pending = append(pending, st.finding)
		case st.firing:
			f.Endpoints[i].Findings = append(f.Endpoints[i].Findings, st.finding)
		default:
			f.Endpoints[i].Pending = append(f.Endpoints[i].Pending, st.finding)
		}
	})
	for i := range f.Endpoints {
		SortFindings(f.Endpoints[i].Findings)
		SortFindings(f.Endpoints[i].Pending)
	}
	SortFindings(all)
	SortFindings(pending)
	f.Findings, f.Pending = all, pending
}

// eachPlace calls at for every shown finding in the order of d.states:
// with -1 for the frame's list, then with the index of each endpoint it
// concerns (by name; a GPU finding, the endpoints holding the device).
func (d *Detector) eachPlace(f *diagnose.Frame, byName map[string]int, at func(st *ruleState, i int)) {
	for _, st := range d.states {
		if !st.shown {
			continue
		}
		at(st, -1)
		if gpus := st.finding.GPUs; len(gpus) > 0 {
			for i := range f.Endpoints {
				if slices.Contains(f.Endpoints[i].GPU.GPUs, gpus[0]) {
					at(st, i)
				}
			}
			continue
		}
		if i, ok := byName[st.finding.Target]; ok {
			at(st, i)
		}
	}
}

// carve gives each endpoint's list (list(ep)) room for its count of
// findings, all from one array; a list with none stays nil.
func carve(eps []diagnose.EndpointView, counts []int, list func(*diagnose.EndpointView) *[]diagnose.Finding) {
	total := 0
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return
	}
	backing := make([]diagnose.Finding, 0, total)
	at := 0
	for i, c := range counts {
		if c > 0 {
			*list(&eps[i]) = backing[at : at : at+c]
			at += c
		}
	}
}

// describe refreshes a pending or firing finding's words and numbers from
// the frame.
// A finding a more specific one supersedes is not shown, so its words are
// not built (rules precede those they supersede in the table, so that
// verdict is this frame's).
func (d *Detector) describe(x *evalCtx, st *ruleState, ri int, sev diagnose.Severity, u *unit, met bool) {
	r := &d.rules[ri]
	old := st.finding
	if d.superseded(st.target, ri, false) {
		st.shown = false
		st.finding.Severity = sev
		if met {
			st.finding.LastSeen = x.now
		}
		return
	}
	// Built in the detector's one scratch finding and copied to the state:
	// handed to the rule's describe, a finding of its own escaped to the
	// heap at every description (a twentieth of a 1,000-endpoint fleet's
	// allocations, BENCHMARKS.md issue 23).
	fd := &d.scratch
	*fd = diagnose.Finding{Rule: r.ID, Severity: sev, Model: u.model, Engine: u.engine,
		FirstSeen: old.FirstSeen, LastSeen: old.LastSeen, Title: r.Title}
	switch {
	case u.target != "":
		fd.Target = u.target
		if u.gpu >= 0 {
			fd.GPUs = []int{u.gpu}
		}
	default:
		fd.Target = u.ep.Name
	}
	if met {
		fd.LastSeen = x.now
	}
	r.describe(x, u, r.Values, sev, fd)
	inEngineTerms(fd, u.ep)
	if in, _, _ := d.generals(st.target, ri); in > fd.Severity && fd.Severity != diagnose.SevInfo {
		fd.Severity = in
	}
	if st.target != "" {
		shown := d.shownTo[st.target]
		if shown == nil {
			shown = map[string]shownFlag{}
			d.shownTo[st.target] = shown
		}
		steadyFlags(shown, fd)
	}
	st.finding, st.shown = *fd, true
}

// superseded reports whether a rule that restates rule ri more precisely
// (the cause graph's restates edges) fires, not resolving, on the unit's
// endpoint (target) this evaluation, or, with pending, is shown pending there.
func (d *Detector) superseded(target string, ri int, pending bool) bool {
	if target == "" || len(d.supers[ri]) == 0 || d.rules[ri].Scope == ScopeFleet {
		return false
	}
	for _, j := range d.supers[ri] {
		m := d.live[liveKey{target, j}]
		if m.firing == d.gen || pending && m.pending == d.gen {
			return true
		}
	}
	return false
}

// flagMargin is how far a recommended value must move before the shown
// one follows: a --max-num-seqs computed from a minute's averages wanders
// by a few sequences from one scrape to the next, and two engineers who
// look ten seconds apart must read the same number.
const flagMargin = 0.15

// shownFlag is a recommendation as last shown on an endpoint: the value
// computed then and the (rounded) value shown.
type shownFlag struct{ exact, shown float64 }

// steadyFlags keeps each numeric recommendation where it was last shown
// on the endpoint (whichever rule says it) until it moves by more than
// flagMargin, in the finding's flags and action alike; its Why says
// today's value. The evidence decides (the exact values, so rounding's
// steps are no move) and so does what is shown (a rounded value that
// would change by less is no move either). (For --max-num-seqs the fit
// keeps a 15% KV headroom, so a held value at most 15% above today's fit
// is inside it.)
func steadyFlags(shownTo map[string]shownFlag, fd *diagnose.Finding) {
	for i := range fd.Flags {
		fc := &fd.Flags[i]
		before := fc.To
		if v, held, ok := holdFlag(shownTo, fc, true); ok {
			fd.Action = replaceTo(fd.Action, fc, before, v, held)
		}
	}
}

// holdFlag puts in fc.To the value last shown for fc.Flag while the
// evidence stays within flagMargin of the value it was computed at, with
// its Why saying today's value; it reports whether it did, with today's
// value v and the held one. With record, a value that moved past the
// margin becomes the one shown from now on.
func holdFlag(shownTo map[string]shownFlag, fc *diagnose.FlagChange, record bool) (v float64, held diagnose.Value, ok bool) {
	if !fc.To.Numeric() {
		return v, held, false
	}
	v = fc.To.Num
	if bad(v) || v <= 0 {
		return v, held, false
	}
	exact := fc.Exact
	if exact <= 0 {
		exact = v
	}
	prev, seen := shownTo[fc.Flag]
	if !seen || math.Abs(exact-prev.exact) > flagMargin*prev.exact && math.Abs(v-prev.shown) > flagMargin*prev.shown {
		if record {
			shownTo[fc.Flag] = shownFlag{exact, v}
		}
		return v, held, false
	}
	if prev.shown == v {
		return v, held, false
	}
	// Shown as today's value is: the same kind of number, the same digits.
	held = fc.To
	held.Num = prev.shown
	now := say("%s", fc.To)
	if fc.Exact > 0 {
		now = say("%s, rounded %s", exactWords(fc.Exact), fc.To)
	}
	fc.Why = fc.Why.Add("; shown as %s until the evidence moves by more than %s from the %s it was computed at (now %s)",
		held, pct(flagMargin), exactWords(prev.exact), now)
	fc.To = held
	return v, held, true
}

// exactWords spells a computed value the hold compares: with a decimal
// below 100, so a reader can check the margin (28.6 against 33 is
// within 15 %; a floored 28 read as outside it).
func exactWords(v float64) diagnose.Value {
	if v < 100 {
		return dec(v, 1)
	}
	return grouped(math.Floor(v))
}

// held is fc as the endpoint shows it (holdFlag), for a sentence that
// words what the shown value adds before steadyFlags holds the finding's
// flags: its arithmetic then agrees with the value beside it.
func (x *evalCtx) held(target string, fc diagnose.FlagChange) diagnose.FlagChange {
	shown := x.shownTo[target]
	if shown == nil {
		return fc
	}
	// An SGLang endpoint's findings were shown in its terms: the value
	// held is under SGLang's name for the lever (the verdict, computed in
	// vLLM's, read "--max-running-requests 48 → 56, 60, 64" by turns
	// beside a finding held at 60).
	name := fc.Flag
	if _, ok := shown[name]; !ok {
		alt := fc
		if sglangFlagChange(&alt) && alt.Flag != name {
			if _, ok := shown[alt.Flag]; ok {
				fc.Flag = alt.Flag
			}
		}
	}
	holdFlag(shown, &fc, false)
	fc.Flag = name
	return fc
}

// replaceTo puts held in place of fc's value (to, v) in a finding's action,
// which words it as "FROM → TO", "FLAG to TO" or "holds TO sequences": the
// first of the action's values that is that value, after one of those
// words.
func replaceTo(action diagnose.Text, fc *diagnose.FlagChange, to diagnose.Value, v float64, held diagnose.Value) diagnose.Text {
	at := 0
	for i := range action.Args {
		start, end := nextVerb(action.Form, at)
		if start < 0 {
			break
		}
		at = end
		a := &action.Args[i]
		if a.Kind == diagnose.KindText {
			if r := replaceTo(*a.Text, fc, to, v, held); !sameText(r, *a.Text) {
				return withArg(action, i, diagnose.Value{Kind: diagnose.KindText, Text: &r})
			}
			continue
		}
		before, after := action.Form[:start], action.Form[end:]
		words := !fc.From.IsZero() && strings.HasSuffix(before, " → ") || strings.HasSuffix(before, fc.Flag+" to ") ||
			strings.HasSuffix(before, "holds ") && strings.HasPrefix(after, " ")
		if words && isTo(a, to, v) {
			return withArg(action, i, held)
		}
	}
	return action
}

// nextVerb finds the fmt verb at or after from in form: [start, end).
func nextVerb(form string, from int) (start, end int) {
	for i := from; i < len(form); i++ {
		if form[i] != '%' {
			continue
		}
		if i+1 < len(form) && form[i+1] == '%' {
			i++
			continue
		}
		for j := i + 1; j < len(form); j++ {
			if c := form[j]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
				return i, j + 1
			}
		}
		return -1, -1
	}
	return -1, -1
}

// isTo says a value of an action is a flag's To: the same number.
func isTo(a *diagnose.Value, to diagnose.Value, v float64) bool {
	return a.Numeric() && a.Kind == to.Kind && a.Num == v
}

func withArg(t diagnose.Text, i int, v diagnose.Value) diagnose.Text {
	t.Args = slices.Clone(t.Args)
	t.Args[i] = v
	return t
}

func sameText(a, b diagnose.Text) bool {
	return a.Form == b.Form && len(a.Args) == len(b.Args) && (len(a.Args) == 0 || &a.Args[0] == &b.Args[0])
}
