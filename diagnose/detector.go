package diagnose

import (
	"math"
	"slices"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// Detector runs the rules over frames and keeps what they need between
// frames: per rule and target the pending/firing state (a condition must
// hold for the rule's for before it fires and its clear condition must hold
// for resolve_for before it resolves, so findings do not flap), and a longer
// downsampled history per endpoint for slow pathologies. Time comes from the
// frame. It is not safe for concurrent use: the goroutine that assembles
// frames evaluates them.
type Detector struct {
	rules  []ActiveRule
	slo    SLO
	forCap time.Duration
	eps    []*epState
	fleet  map[fleetKey]*ruleState
	gpus   map[gpuStateKey]*ruleState
	gen    uint32
	supers [][]int // per rule, the indexes of the rules that supersede it
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

// ruleState is one rule on one target.
type ruleState struct {
	pendingSince time.Time // the condition has held since (zero: not pending)
	firing       bool
	clearSince   time.Time // firing, and the clear condition has held since
	gen          uint32    // the last evaluation that visited it
	finding      Finding   // the last description, while firing
}

// epState is what the detector keeps per endpoint.
type epState struct {
	name    string
	states  map[stateKey]*ruleState
	long    longHistory
	leak    leakMemo
	down    downHistory
	restart time.Time
}

// NewDetector returns a detector with cfg applied to the rule table.
func NewDetector(cfg RulesConfig) (*Detector, error) {
	rules, err := cfg.Active()
	if err != nil {
		return nil, err
	}
	slo := cfg.SLO
	if slo.Name == "" {
		slo = SLOProfiles()[0]
	}
	d := &Detector{rules: rules, slo: slo, forCap: cfg.ForCap, fleet: map[fleetKey]*ruleState{}, gpus: map[gpuStateKey]*ruleState{}, supers: make([][]int, len(rules))}
	for i, r := range rules {
		for _, id := range r.SupersededBy {
			for j := range rules {
				if rules[j].ID == id {
					d.supers[i] = append(d.supers[i], j)
				}
			}
		}
	}
	return d, nil
}

// SetForCap caps every rule's for duration (0: no cap); see RulesConfig.ForCap.
func (d *Detector) SetForCap(c time.Duration) { d.forCap = c }

// Rules returns the active rules (configuration applied).
func (d *Detector) Rules() []ActiveRule { return d.rules }

// SLO returns the profile the latency rules measure against.
func (d *Detector) SLO() SLO { return d.slo }

// SetSLO switches the profile the latency rules measure against (the TUI's
// profile key), so findings and the latency row judge by the same targets.
func (d *Detector) SetSLO(s SLO) { d.slo = s }

// unit is what one evaluation of a rule looks at: an endpoint's merged
// stats, or one (model, engine) sub-series of it.
type unit struct {
	ep            *EndpointView
	es            *epState
	st            *Stats
	model, engine string
	// GPU rules: the device (slot in Frame.GPU.GPUs, -1 when the reading no
	// longer lists it; gpuIndex is its device index) and who it serves.
	gpu, gpuIndex int
	target        string
}

// evalCtx carries the frame and per-endpoint values computed on demand.
type evalCtx struct {
	f   *Frame
	now time.Time
	slo *SLO
	// since, when a check sets it, backdates a new pending state: the
	// condition is known to have held since then (an outage that began
	// before this evaluation).
	since time.Time

	// peers are the replicas a fleet finding compares its target with.
	peers []*EndpointView
	u     unit
	es    *epState // the endpoint being evaluated

	// Lazily derived from the endpoint's sparkline, once per endpoint.
	trendEp   *EndpointView
	trendDone bool
	waitSlope float64 // waiting requests per second, least squares over the window
	runMean   float64 // mean running requests over the window
	waitMean  float64
	swapMax   float64 // most requests swapped at any scrape of the window (V0)
	trendSpan time.Duration
}

// unitFor fills the context's one unit: evaluations never keep it, so it
// is reused rather than allocated per rule and endpoint.
func (x *evalCtx) unitFor(ep *EndpointView, es *epState, st *Stats, model, engine string) *unit {
	x.u = unit{ep: ep, es: es, st: st, model: model, engine: engine}
	return &x.u
}

// Evaluate runs every enabled rule over the frame and attaches the active
// findings, worst first, to the frame and to each endpoint.
func (d *Detector) Evaluate(f *Frame) {
	d.gen++
	f.SLO = d.slo
	x := &evalCtx{f: f, now: f.Time, slo: &d.slo}
	var all []Finding
	for i := range f.Endpoints {
		ep := &f.Endpoints[i]
		es := d.endpoint(i, ep.Name)
		es.observe(ep, f.Time)
		x.trendEp, x.trendDone, x.es = ep, false, es
		d.evalEndpoint(x, ep, es)
		ep.Findings = d.collect(es)
		all = append(all, ep.Findings...)
	}
	if len(d.eps) > len(f.Endpoints) {
		d.eps = d.eps[:len(f.Endpoints)]
	}
	fleet := d.evalFleet(x, f)
	for i := range fleet {
		fd := &fleet[i]
		for j := range f.Endpoints {
			if f.Endpoints[j].Name == fd.Target {
				f.Endpoints[j].Findings = append(f.Endpoints[j].Findings, *fd)
				SortFindings(f.Endpoints[j].Findings)
				break
			}
		}
	}
	all = append(all, fleet...)
	gpus := d.evalGPUs(x, f)
	for i := range gpus {
		for j := range f.Endpoints {
			ep := &f.Endpoints[j]
			if len(gpus[i].GPUs) > 0 && slices.Contains(ep.GPU.GPUs, gpus[i].GPUs[0]) {
				ep.Findings = append(ep.Findings, gpus[i])
				SortFindings(ep.Findings)
			}
		}
	}
	all = append(all, gpus...)
	SortFindings(all)
	f.Findings = all
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
			es = &epState{name: name, states: map[stateKey]*ruleState{}}
			es.long.reset()
		}
		d.eps[i] = es
	}
	return es
}

// observe records what the slow rules need, once per frame.
func (es *epState) observe(ep *EndpointView, now time.Time) {
	es.down.observe(ep, now)
	if !ep.RestartedAt.IsZero() && !ep.RestartedAt.Equal(es.restart) {
		// A new process: memory starts again from its load-time size.
		es.restart = ep.RestartedAt
		es.long.reset()
	}
	if ep.State == StateUp && ep.Kind == sources.KindEngine {
		es.long.observe(ep, now)
	}
}

func (d *Detector) evalEndpoint(x *evalCtx, ep *EndpointView, es *epState) {
	up := ep.State == StateUp && ep.Kind == sources.KindEngine
	for ri := range d.rules {
		r := &d.rules[ri]
		if !r.Enabled {
			continue
		}
		switch r.Scope {
		case ScopeTarget:
			if ep.State == StatePending {
				continue
			}
			u := x.unitFor(ep, es, &ep.Stats, soleModel(ep), "")
			d.step(x, es.states, stateKey{rule: ri}, ri, u)
		case ScopeEndpoint:
			if !up {
				continue
			}
			u := x.unitFor(ep, es, &ep.Stats, soleModel(ep), "")
			d.step(x, es.states, stateKey{rule: ri, model: u.model}, ri, u)
		case ScopeEngine:
			if !up {
				continue
			}
			if len(ep.Subs) > 1 {
				for k := range ep.Subs {
					s := &ep.Subs[k]
					u := x.unitFor(ep, es, &s.Stats, s.Key.Model, s.Key.Engine)
					d.step(x, es.states, stateKey{rule: ri, model: u.model, engine: u.engine}, ri, u)
				}
				continue
			}
			engine := ""
			if len(ep.Subs) == 1 {
				engine = ep.Subs[0].Key.Engine
			}
			u := x.unitFor(ep, es, &ep.Stats, soleModel(ep), engine)
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
				d.transition(x, es.states, k, st, k.rule, condUnknown, 0, nil)
			}
		}
	}
}

func soleModel(ep *EndpointView) string {
	if len(ep.Models) == 1 {
		return ep.Models[0]
	}
	return ""
}

// step evaluates one rule on one unit and advances its state.
func (d *Detector) step(x *evalCtx, states map[stateKey]*ruleState, k stateKey, ri int, u *unit) {
	r := &d.rules[ri]
	x.since = time.Time{}
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
	d.transition(x, states, k, st, ri, c, sev, u)
}

func (d *Detector) forOf(r *ActiveRule) time.Duration {
	if d.forCap > 0 && r.For > d.forCap {
		return d.forCap
	}
	return r.For
}

// transition is the state machine: pending → firing → resolved.
func (d *Detector) transition(x *evalCtx, states map[stateKey]*ruleState, k stateKey, st *ruleState, ri int, c cond, sev Severity, u *unit) {
	r := &d.rules[ri]
	now := x.now
	switch c {
	case condMet:
		if st.pendingSince.IsZero() {
			st.pendingSince = now
			if !x.since.IsZero() && x.since.Before(now) {
				st.pendingSince = x.since
			}
		}
		st.clearSince = time.Time{}
		if !st.firing && now.Sub(st.pendingSince) >= d.forOf(r) {
			st.firing = true
			st.finding = Finding{FirstSeen: st.pendingSince}
		}
		if st.firing {
			d.describe(x, st, ri, sev, u, true)
		}
	case condHold:
		if !st.firing {
			delete(states, k)
			return
		}
		st.clearSince = time.Time{}
		d.describe(x, st, ri, st.finding.Severity, u, false)
	default:
		if !st.firing {
			delete(states, k)
			return
		}
		if st.clearSince.IsZero() {
			st.clearSince = now
		}
		if now.Sub(st.clearSince) >= r.ResolveFor {
			delete(states, k)
		}
	}
}

// describe refreshes a firing finding's words and numbers from the frame.
// A finding a more specific one supersedes is not shown, so its words are
// not built (rules precede those they supersede in the table, so that
// verdict is this frame's).
func (d *Detector) describe(x *evalCtx, st *ruleState, ri int, sev Severity, u *unit, met bool) {
	r := &d.rules[ri]
	old := st.finding
	if x.es != nil && d.superseded(x.es, ri) {
		st.finding.Severity = sev
		if met {
			st.finding.LastSeen = x.now
		}
		return
	}
	fd := Finding{Rule: r.ID, Severity: sev, Model: u.model, Engine: u.engine,
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
	st.finding = fd
}

// superseded reports whether a rule that supersedes rule ri fires on the
// endpoint.
func (d *Detector) superseded(es *epState, ri int) bool {
	sup := d.supers[ri]
	if len(sup) == 0 {
		return false
	}
	for k, st := range es.states {
		if st.firing && slices.Contains(sup, k.rule) {
			return true
		}
	}
	return false
}

// collect returns an endpoint's firing findings, without those a more
// specific firing rule explains.
func (d *Detector) collect(es *epState) []Finding {
	var out []Finding
	for k, st := range es.states {
		if st.firing && !d.superseded(es, k.rule) {
			out = append(out, st.finding)
		}
	}
	SortFindings(out)
	return out
}

// evalFleet runs the fleet rules.
func (d *Detector) evalFleet(x *evalCtx, f *Frame) []Finding {
	x.es = nil
	for ri := range d.rules {
		r := &d.rules[ri]
		if !r.Enabled || r.Scope != ScopeFleet {
			continue
		}
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
			x.since = time.Time{}
			d.transitionFleet(x, k, st, ri, h.c, h.sev, &u, h.peers)
		}
	}
	var out []Finding
	for k, st := range d.fleet {
		if st.gen != d.gen {
			d.transitionFleet(x, k, st, k.rule, condUnknown, 0, nil, nil)
			if d.fleet[k] == nil {
				continue
			}
		}
		if st.firing {
			out = append(out, st.finding)
		}
	}
	return out
}

func (d *Detector) transitionFleet(x *evalCtx, k fleetKey, st *ruleState, ri int, c cond, sev Severity, u *unit, peers []*EndpointView) {
	m := map[stateKey]*ruleState{{rule: ri}: st}
	x.peers = peers
	d.transition(x, m, stateKey{rule: ri}, st, ri, c, sev, u)
	x.peers = nil
	if len(m) == 0 {
		delete(d.fleet, k)
	}
}

// trend derives the endpoint's queue trend and mean batch from its
// sparkline over the window, once per endpoint and frame.
func (x *evalCtx) trend() {
	if x.trendDone {
		return
	}
	x.trendDone = true
	x.waitSlope, x.runMean, x.waitMean, x.swapMax, x.trendSpan = math.NaN(), math.NaN(), math.NaN(), math.NaN(), 0
	pts := x.trendEp.Spark
	if len(pts) < 3 {
		return
	}
	from := x.now.Add(-x.f.Window).UnixMilli()
	var n, sx, sy, sxx, sxy, run, runN float64
	var first, last int64
	t0 := pts[len(pts)-1].UnixMilli
	for i := len(pts) - 1; i >= 0; i-- {
		p := &pts[i]
		if p.UnixMilli < from {
			break
		}
		if r := float64(p.V[SpRunning]); !math.IsNaN(r) {
			run += r
			runN++
		}
		x.swapMax = nanMax(x.swapMax, float64(p.V[SpSwapped]))
		w := float64(p.V[SpWaiting])
		if math.IsNaN(w) {
			continue
		}
		t := float64(p.UnixMilli-t0) / 1000
		n++
		sx += t
		sy += w
		sxx += t * t
		sxy += t * w
		if last == 0 {
			last = p.UnixMilli
		}
		first = p.UnixMilli
	}
	if runN > 0 {
		x.runMean = run / runN
	}
	if n < 3 {
		return
	}
	x.trendSpan = time.Duration(last-first) * time.Millisecond
	x.waitMean = sy / n
	den := n*sxx - sx*sx
	if den > 0 {
		x.waitSlope = (n*sxy - sx*sy) / den
	}
}
