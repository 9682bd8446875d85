package detect

import (
	"slices"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// Detector runs the rules over frames and keeps what they need between
// frames: per rule and target the pending/firing state (a condition must
// hold for the rule's for before it fires and its clear condition must hold
// for resolve_for before it resolves, so findings do not flap), and per
// endpoint the memory a stateful rule declares (see ruleMemory). Time comes from the
// frame. It is not safe for concurrent use: the goroutine that assembles
// frames evaluates them.
type Detector struct {
	rules  []ActiveRule
	slo    diagnose.SLO
	forCap time.Duration
	eps    []*epState
	fleet  map[fleetKey]*ruleState
	gpus   map[gpuStateKey]*ruleState
	gen    uint32
	supers [][]int // per rule, the indexes of the rules that supersede it
	// stateful are the indexes of the rules that declare a memory.
	stateful []int
	kv       diagnose.KVBands // the KV colour bands of the active thresholds
}

// stateKey names one rule's state on one endpoint: the engine-scope rules
// keep one per (model, engine).
type stateKey struct {
	rule          int
	model, engine string
}

type fleetKey struct {
	rule          int
	model, target string
}

// epState is what the detector keeps per endpoint: the rules' states and
// the memories of the rules that declare one.
type epState struct {
	name   string
	states map[stateKey]*ruleState
	mem    []ruleMemory // by rule index; nil for a rule that keeps none
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
	d := &Detector{rules: rules, slo: slo, forCap: cfg.ForCap, fleet: map[fleetKey]*ruleState{}, gpus: map[gpuStateKey]*ruleState{}, supers: make([][]int, len(rules))}
	for i, r := range rules {
		if r.memory != nil {
			d.stateful = append(d.stateful, i)
		}
		for _, id := range r.SupersededBy {
			for j := range rules {
				if rules[j].ID == id {
					d.supers[i] = append(d.supers[i], j)
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
}

// evalCtx carries the frame and per-endpoint values computed on demand.
type evalCtx struct {
	f   *diagnose.Frame
	now time.Time
	slo *diagnose.SLO
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
	es    *epState // the endpoint being evaluated
}

// unitFor fills the context's one unit: evaluations never keep it, so it
// is reused rather than allocated per rule and endpoint.
func (x *evalCtx) unitFor(ep *diagnose.EndpointView, es *epState, ri int, st *diagnose.Stats, model, engine string) *unit {
	x.u = unit{ep: ep, mem: es.mem[ri], st: st, model: model, engine: engine}
	return &x.u
}

// Evaluate runs every enabled rule over the frame and attaches the active
// findings, worst first, to the frame and to each endpoint.
func (d *Detector) Evaluate(f *diagnose.Frame) {
	d.gen++
	f.SLO = d.slo
	f.KVBands = d.kv
	x := &evalCtx{f: f, now: f.Time, slo: &d.slo}
	var all, pending []diagnose.Finding
	for i := range f.Endpoints {
		ep := &f.Endpoints[i]
		es := d.endpoint(i, ep.Name)
		d.observe(es, ep, f.Time)
		x.es = es
		d.evalEndpoint(x, ep, es)
		ep.Findings, ep.Pending = d.collect(es)
		all = append(all, ep.Findings...)
		pending = append(pending, ep.Pending...)
	}
	if len(d.eps) > len(f.Endpoints) {
		d.eps = d.eps[:len(f.Endpoints)]
	}
	fleet, fleetPending := d.evalFleet(x, f)
	attach(f, fleet, fleetPending, func(ep *diagnose.EndpointView, fd *diagnose.Finding) bool { return ep.Name == fd.Target })
	gpus, gpuPending := d.evalGPUs(x, f)
	attach(f, gpus, gpuPending, func(ep *diagnose.EndpointView, fd *diagnose.Finding) bool {
		return len(fd.GPUs) > 0 && slices.Contains(ep.GPU.GPUs, fd.GPUs[0])
	})
	all = append(append(all, fleet...), gpus...)
	pending = append(append(pending, fleetPending...), gpuPending...)
	SortFindings(all)
	SortFindings(pending)
	f.Findings, f.Pending = all, pending
	groupFindings(f)
}

// attach adds fleet or GPU findings to the endpoints they concern.
func attach(f *diagnose.Frame, active, pending []diagnose.Finding, concerns func(*diagnose.EndpointView, *diagnose.Finding) bool) {
	for j := range f.Endpoints {
		ep := &f.Endpoints[j]
		na, np := len(ep.Findings), len(ep.Pending)
		for i := range active {
			if concerns(ep, &active[i]) {
				ep.Findings = append(ep.Findings, active[i])
			}
		}
		for i := range pending {
			if concerns(ep, &pending[i]) {
				ep.Pending = append(ep.Pending, pending[i])
			}
		}
		if len(ep.Findings) != na {
			SortFindings(ep.Findings)
		}
		if len(ep.Pending) != np {
			SortFindings(ep.Pending)
		}
	}
}

func (d *Detector) endpoint(i int, name string) *epState {
	for len(d.eps) <= i {
		d.eps = append(d.eps, nil)
	}
	es := d.eps[i]
	if es == nil || es.name != name {
		// A target that left shifts the ones after it: their state
		// follows them by name.
		es = nil
		for _, o := range d.eps {
			if o != nil && o.name == name {
				es = o
				break
			}
		}
		if es == nil {
			es = &epState{name: name, states: map[stateKey]*ruleState{}, mem: make([]ruleMemory, len(d.rules))}
		}
		d.eps[i] = es
	}
	return es
}

func (d *Detector) evalEndpoint(x *evalCtx, ep *diagnose.EndpointView, es *epState) {
	up := ep.State == diagnose.StateUp && ep.Kind == sources.KindEngine
	for ri := range d.rules {
		r := &d.rules[ri]
		if !r.Enabled {
			continue
		}
		switch r.Scope {
		case ScopeTarget:
			if ep.State == diagnose.StatePending {
				continue
			}
			u := x.unitFor(ep, es, ri, &ep.Stats, soleModel(ep), "")
			d.step(x, es.states, stateKey{rule: ri}, ri, u)
		case ScopeEndpoint:
			if !up {
				continue
			}
			u := x.unitFor(ep, es, ri, &ep.Stats, soleModel(ep), "")
			d.step(x, es.states, stateKey{rule: ri, model: u.model}, ri, u)
		case ScopeEngine:
			if !up {
				continue
			}
			if len(ep.Subs) > 1 {
				for k := range ep.Subs {
					s := &ep.Subs[k]
					u := x.unitFor(ep, es, ri, &s.Stats, s.Key.Model, s.Key.Engine)
					d.step(x, es.states, stateKey{rule: ri, model: u.model, engine: u.engine}, ri, u)
				}
				continue
			}
			engine := ""
			if len(ep.Subs) == 1 {
				engine = ep.Subs[0].Key.Engine
			}
			u := x.unitFor(ep, es, ri, &ep.Stats, soleModel(ep), engine)
			d.step(x, es.states, stateKey{rule: ri, model: u.model, engine: u.engine}, ri, u)
		}
	}
	// States no rule visited this time (an engine that went away, an
	// endpoint that is down, a rule that was disabled) have no data.
	if len(es.states) > 0 {
		for k, st := range es.states {
			if st.gen != d.gen {
				if !up && d.rules[k.rule].Scope != ScopeTarget {
					delete(es.states, k) // down: its findings are the target's now
					continue
				}
				if !d.advance(x, st, k.rule, condUnknown, 0, nil) {
					delete(es.states, k)
				}
			}
		}
	}
}

func soleModel(ep *diagnose.EndpointView) string {
	if len(ep.Models) == 1 {
		return ep.Models[0]
	}
	return ""
}

// step evaluates one rule on one unit and advances its state.
func (d *Detector) step(x *evalCtx, states map[stateKey]*ruleState, k stateKey, ri int, u *unit) {
	r := &d.rules[ri]
	x.since, x.over = time.Time{}, 0
	c, sev := r.check(x, u, r.Values)
	var st *ruleState
	if len(states) > 0 {
		st = states[k]
	}
	if st == nil {
		if c != condMet {
			return
		}
		st = &ruleState{}
		states[k] = st
	}
	st.gen = d.gen
	if !d.advance(x, st, ri, c, sev, u) {
		delete(states, k)
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
	if d.supersededNow(x, ri) {
		st.shown = false
		st.finding.Severity = sev
		if met {
			st.finding.LastSeen = x.now
		}
		return
	}
	fd := diagnose.Finding{Rule: r.ID, Severity: sev, Model: u.model, Engine: u.engine,
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
	r.describe(x, u, r.Values, sev, &fd)
	st.finding, st.shown = fd, true
}

// superseded reports whether a rule that supersedes rule ri fires (and is
// not resolving) on the endpoint.
func (d *Detector) superseded(es *epState, ri int) bool { return d.supersededBy(es, ri, false) }

// supersededBy is superseded, counting pending superseding rules too when
// pending is set.
func (d *Detector) supersededBy(es *epState, ri int, pending bool) bool {
	sup := d.supers[ri]
	if len(sup) == 0 {
		return false
	}
	for k, st := range es.states {
		live := st.firing && st.clearSince.IsZero() || pending && !st.firing && st.shown
		if live && slices.Contains(sup, k.rule) {
			return true
		}
	}
	return false
}

// collect returns an endpoint's shown findings: firing and resolving
// ones, and separately the pending ones, without those a more specific
// firing rule explains.
func (d *Detector) collect(es *epState) (active, pending []diagnose.Finding) {
	for _, st := range es.states {
		active, pending = appendShown(active, pending, st)
	}
	SortFindings(active)
	SortFindings(pending)
	return active, pending
}

func appendShown(active, pending []diagnose.Finding, st *ruleState) ([]diagnose.Finding, []diagnose.Finding) {
	switch {
	case !st.shown:
	case st.firing:
		active = append(active, st.finding)
	default:
		pending = append(pending, st.finding)
	}
	return active, pending
}

// evalFleet runs the fleet rules.
func (d *Detector) evalFleet(x *evalCtx, f *diagnose.Frame) (active, pending []diagnose.Finding) {
	x.es = nil
	for ri := range d.rules {
		r := &d.rules[ri]
		if !r.Enabled || r.Scope != ScopeFleet {
			continue
		}
		x.since, x.over = time.Time{}, 0
		for _, h := range r.fleetCheck(x, f, r.Values) {
			k := fleetKey{rule: ri, model: h.model, target: h.ep.Name}
			st := d.fleet[k]
			if st == nil {
				if h.c != condMet {
					continue
				}
				st = &ruleState{}
				d.fleet[k] = st
			}
			st.gen = d.gen
			u := unit{ep: h.ep, st: &h.ep.Stats, model: h.model}
			x.peers, x.over = h.peers, h.over
			if !d.advance(x, st, ri, h.c, h.sev, &u) {
				delete(d.fleet, k)
			}
			x.peers = nil
		}
	}
	for k, st := range d.fleet {
		if st.gen != d.gen && !d.advance(x, st, k.rule, condUnknown, 0, nil) {
			delete(d.fleet, k)
			continue
		}
		active, pending = appendShown(active, pending, st)
	}
	return active, pending
}
