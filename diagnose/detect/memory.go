package detect

import (
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// ruleMemory is what a stateful rule remembers about one endpoint across
// frames (a long history, an outage log). A rule declares it with
// Rule.memory; the detector makes one per endpoint while the rule is
// enabled, feeds it every frame before any check runs (down or up, so it
// sees outages too), hands it to check and describe as unit.mem, and drops
// it with the endpoint or when the rule is disabled. Each implementation
// bounds itself. Nothing else about a rule lives in the detector.
type ruleMemory interface {
	observe(ep *diagnose.EndpointView, now time.Time)
}

// observe feeds the endpoint's frame to the memories of the enabled rules
// that keep one, making them on first use.
func (d *Detector) observe(es *epState, ep *diagnose.EndpointView, now time.Time) {
	for _, ri := range d.stateful {
		r := &d.rules[ri]
		if !r.Enabled {
			es.mem[ri] = nil // a rule enabled again starts afresh
			continue
		}
		if es.mem[ri] == nil {
			es.mem[ri] = r.memory()
		}
		es.mem[ri].observe(ep, now)
	}
}

// memoryOf is the unit's rule memory as the rule's own type. A rule reads
// only what it declared, so a mismatch is a programming error.
func memoryOf[M ruleMemory](u *unit) M { return u.mem.(M) }
