package detect

import (
	"math"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// The one rule state machine, shared by every scope (engine, endpoint,
// target, fleet, GPU): each scope only says where its states live.
//
//	condMet  ─ holds for Hold ─▶ firing ─ clear/unknown ─▶ resolving ─ resolve_for ─▶ gone
//	   ▲ pending (shown)            │ ▲ condMet again                 │
//	   └────────────────────────────┘ └───────────────────────────────┘
//
// Severity has hysteresis like firing: it rises at once and falls only
// after the lower severity has held for the rule's resolve_for, so a ratio
// sitting on the critical threshold does not flap.

// fastHold is the shortest hold: data far past a threshold fires after it.
// Up to marginal × the threshold a rule keeps its full for (noise sits
// there); beyond, the hold shrinks in proportion.
const (
	fastHold = 15 * time.Second
	marginal = 1.5
)

// ruleState is one rule on one unit (an engine, an endpoint, a fleet
// member, a GPU).
type ruleState struct {
	pendingSince time.Time // the condition has held since (zero: not pending)
	firing       bool
	clearSince   time.Time         // firing, and the premise has not held since: resolving
	sev          diagnose.Severity // the severity shown while firing
	lowerSince   time.Time         // firing, and the check has said a lower severity since
	gen          uint32            // the last evaluation that visited it
	finding      diagnose.Finding  // the last description, while pending or firing
	shown        bool              // finding describes this evaluation (pending: not superseded)
	hold         time.Duration     // the hold it fired after (or needs, pending)
	target       string            // the endpoint of its unit ("" for a GPU): where supersession looks
	lapseSince   time.Time         // pending, and its condition lapsed since (bridged while a rule it restates holds)
}

// holdOf is how long a condition must hold before the rule fires: the
// rule's for, times marginal ÷ how far past its threshold the data is
// (over: value ÷ threshold; 0 when the rule does not say), never below
// fastHold nor above for, and capped by ForCap (vtop --once).
func (d *Detector) holdOf(r *ActiveRule, over float64) time.Duration {
	h := r.For
	switch {
	case math.IsInf(over, 1):
		h = 0
	case over > marginal:
		h = time.Duration(float64(h) * marginal / over)
	}
	if h < fastHold {
		h = min(fastHold, r.For)
	}
	if d.forCap > 0 && h > d.forCap {
		h = d.forCap
	}
	return h
}

// advance moves one state by one evaluation's verdict. u is nil when the
// unit was not evaluated (its data went away). It reports whether the
// state is still live; the caller drops it otherwise.
func (d *Detector) advance(x *evalCtx, st *ruleState, ri int, c cond, sev diagnose.Severity, u *unit) bool {
	r := &d.rules[ri]
	now := x.now
	st.shown = false
	switch c {
	case condMet:
		st.lapseSince = time.Time{}
		fresh := st.pendingSince.IsZero()
		if fresh {
			st.pendingSince = now
			if !x.since.IsZero() && x.since.Before(now) {
				st.pendingSince = x.since
			}
		}
		st.clearSince = time.Time{}
		hold := d.holdOf(r, x.over)
		if !st.firing {
			// The more specific rule supersedes the general one while
			// pending too: with a rule it restates already firing, its own
			// condition met names the cause, and it fires now rather than
			// leave the headline to the general rule for its hold.
			_, general, _ := d.generals(st.target, ri)
			if now.Sub(st.pendingSince) < hold && !general {
				// Pending severity has firing's hysteresis: it rises at
				// once and falls only after resolve_for.
				if fresh {
					st.sev, st.lowerSince = sev, time.Time{}
				} else {
					settle(st, sev, now, r.ResolveFor)
				}
				d.inherit(st, ri, sev)
				sev = st.sev
				d.describe(x, st, ri, sev, u, true)
				st.finding.State, st.finding.Hold = diagnose.FindingPending, hold
				st.finding.HeldFor = now.Sub(st.pendingSince)
				st.finding.FirstSeen = st.pendingSince
				// A pending symptom waits behind its pending cause too,
				// and a quiet rule's behind its quiet time.
				if d.superseded(st.target, ri, true) || st.finding.HeldFor < r.QuietFor {
					st.shown = false
				}
				return true
			}
			// A more specific rule pending on the endpoint takes the
			// general one's place as it fires: the headline goes to the
			// cause, not to the rule whose hold ran out first.
			d.promote(x, st.target, ri, max(sev, st.sev))
			// Firing keeps the severity the pending state had reached.
			st.firing, st.sev, st.hold = true, max(sev, st.sev), hold
			st.finding = diagnose.Finding{FirstSeen: st.pendingSince}
		}
		settle(st, sev, now, r.ResolveFor)
		d.inherit(st, ri, sev)
		d.describe(x, st, ri, st.sev, u, true)
		d.firingMarks(st, now)
	case condHold:
		if !st.firing {
			return d.bridge(x, st, ri, u)
		}
		st.clearSince = time.Time{}
		d.describe(x, st, ri, st.sev, u, false)
		d.firingMarks(st, now)
	default:
		if !st.firing {
			return d.bridge(x, st, ri, u)
		}
		if st.clearSince.IsZero() {
			st.clearSince = now
		}
		if now.Sub(st.clearSince) >= r.ResolveFor {
			return false
		}
		// Resolving: the evidence is today's when there is any, the
		// action is withheld (its premise is gone).
		if u != nil {
			d.describe(x, st, ri, st.sev, u, false)
		} else {
			st.shown = !d.superseded(st.target, ri, false)
		}
		st.finding.State, st.finding.ResolvingSince = diagnose.FindingResolving, st.clearSince
		st.finding.HeldFor, st.finding.Hold = st.clearSince.Sub(st.finding.FirstSeen), st.hold
		st.finding.Action, st.finding.Flags = diagnose.Text{}, nil
	}
	return true
}

// settle applies severity hysteresis: a higher severity at once, a lower
// one once it has held for resolveFor.
func settle(st *ruleState, sev diagnose.Severity, now time.Time, resolveFor time.Duration) {
	switch {
	case sev > st.sev:
		st.sev, st.lowerSince = sev, time.Time{}
	case sev < st.sev:
		if st.lowerSince.IsZero() {
			st.lowerSince = now
		}
		if now.Sub(st.lowerSince) >= resolveFor {
			st.sev, st.lowerSince = sev, time.Time{}
		}
	default:
		st.lowerSince = time.Time{}
	}
}

// inherit raises a cause's severity to that of the causes it restates
// that hold on its endpoint; it then falls only through settle's
// hysteresis (an info rule lends and takes none).
func (d *Detector) inherit(st *ruleState, ri int, sev diagnose.Severity) {
	if sev == diagnose.SevInfo {
		return
	}
	if in, _, _ := d.generals(st.target, ri); in > st.sev {
		st.sev, st.lowerSince = in, time.Time{}
	}
}

// pendingGrace is how long a pending cause outlives a lapse of its own
// condition while a rule it restates holds: its rate dipping below the
// threshold for a scrape does not hand the headline to the general rule.
const pendingGrace = 10 * time.Second

// bridge keeps a pending state through a short lapse of its condition
// while a rule it restates holds; it reports whether the state lives.
func (d *Detector) bridge(x *evalCtx, st *ruleState, ri int, u *unit) bool {
	if _, _, general := d.generals(st.target, ri); !general || u == nil || st.pendingSince.IsZero() {
		return false
	}
	if st.lapseSince.IsZero() {
		st.lapseSince = x.now
	}
	if x.now.Sub(st.lapseSince) >= pendingGrace {
		return false
	}
	d.describe(x, st, ri, st.sev, u, false)
	st.finding.State, st.finding.FirstSeen = diagnose.FindingPending, st.pendingSince
	st.finding.HeldFor = x.now.Sub(st.pendingSince)
	if d.superseded(st.target, ri, true) {
		st.shown = false
	}
	return true
}

// promote fires the pending, shown states of the rules that restate rule
// ri on the endpoint target, at least at severity sev (it runs only as a
// rule starts firing).
func (d *Detector) promote(x *evalCtx, target string, ri int, sev diagnose.Severity) {
	if target == "" || len(d.supers[ri]) == 0 {
		return
	}
	for _, j := range d.supers[ri] {
		if d.live[liveKey{target, j}].pending != d.gen {
			continue
		}
		for k, st := range d.states {
			if k.rule != j || st.target != target || st.firing || !st.shown {
				continue
			}
			st.firing, st.sev, st.hold = true, max(st.sev, sev), st.finding.Hold
			st.finding.Severity = max(st.finding.Severity, st.sev)
			d.firingMarks(st, x.now)
			d.mark(j, target, st)
		}
	}
}

func (d *Detector) firingMarks(st *ruleState, now time.Time) {
	st.finding.State, st.finding.ResolvingSince = diagnose.FindingFiring, time.Time{}
	st.finding.HeldFor, st.finding.Hold = now.Sub(st.finding.FirstSeen), st.hold
}
