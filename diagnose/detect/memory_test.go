package detect

import (
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// A rule's memory is declared by the rule and kept by the engine per
// endpoint: made only for enabled rules that declare one, fed on every
// frame (down ones too), and dropped with the endpoint.
func TestRuleMemoryPerEndpoint(t *testing.T) {
	for _, r := range ruleTable {
		if r.memory != nil && (r.Scope == ScopeFleet || r.Scope == ScopeGPU) {
			t.Errorf("%s: a memory is per endpoint; scope %s has none", r.ID, r.Scope)
		}
	}
	cfg := chatCfg()
	cfg.Rules = map[string]RuleConfig{"memory_leak": {Disabled: true}}
	w := newWorld(t, cfg, upEndpoint("a", healthyStats()), upEndpoint("b", healthyStats()))
	// b goes down twice: its outage log holds both starts.
	w.run(t0, 40*time.Second, time.Second, func(now time.Time, w *world) {
		s := now.Sub(t0)
		down := s >= 10*time.Second && s < 15*time.Second || s >= 25*time.Second && s < 30*time.Second
		w.eps[1].State, w.eps[1].Since = diagnose.StateUp, time.Time{}
		if down {
			w.eps[1].State, w.eps[1].Since = diagnose.StateDown, now
		}
	})
	if len(w.d.eps) != 2 {
		t.Fatalf("%d endpoint states", len(w.d.eps))
	}
	for _, es := range w.d.eps {
		for ri, m := range es.mem {
			id := w.d.rules[ri].ID
			_, isDown := m.(*downHistory)
			_, isPrefix := m.(*prefixSeen)
			_, isCut := m.(*cutLow)
			switch {
			case id == "endpoint_down" && !isDown:
				t.Errorf("%s: endpoint_down's memory is %T", es.name, m)
			case id == "prefix_cache_miss" && !isPrefix:
				t.Errorf("%s: prefix_cache_miss's memory is %T", es.name, m)
			case id == "runaway_answers" && !isCut:
				t.Errorf("%s: runaway_answers's memory is %T", es.name, m)
			case id != "endpoint_down" && id != "prefix_cache_miss" && id != "runaway_answers" && m != nil:
				t.Errorf("%s: %s (disabled or stateless) keeps %T", es.name, id, m)
			}
		}
	}
	if n, _ := w.d.eps[1].mem[ruleIndex(t, w.d, "endpoint_down")].(*downHistory).recent(t0.Add(40*time.Second), time.Hour); n != 2 {
		t.Errorf("b's outage log has %d starts, want 2", n)
	}
	// b leaves: its memories go with it; back, it starts afresh.
	w.eps, w.sparks = w.eps[:1], w.sparks[:1]
	w.frame(t0.Add(41 * time.Second))
	if len(w.d.eps) != 1 || w.d.eps[0].name != "a" {
		t.Fatalf("states after b left: %d", len(w.d.eps))
	}
	w.eps, w.sparks = append(w.eps, upEndpoint("b", healthyStats())), append(w.sparks, nil)
	w.frame(t0.Add(42 * time.Second))
	if n, _ := w.d.eps[1].mem[ruleIndex(t, w.d, "endpoint_down")].(*downHistory).recent(t0.Add(42*time.Second), time.Hour); n != 0 {
		t.Errorf("b came back with %d outages remembered", n)
	}
}

func ruleIndex(t *testing.T, d *Detector, id string) int {
	t.Helper()
	for i := range d.rules {
		if d.rules[i].ID == id {
			return i
		}
	}
	t.Fatalf("no rule %s", id)
	return -1
}
