package detect

import "testing"

// Every parameter of every rule is read by the code through a lookup by
// its config key, exactly once, and a value set under that key in the
// configuration is the value at the index the code reads.
func TestParamsPairedByName(t *testing.T) {
	for _, r := range ruleTable {
		for i := range r.Params {
			p := &r.Params[i]
			if n := paramUses[p]; n != 1 {
				t.Errorf("rule %s: parameter %q is looked up %d times, want once", r.ID, p.Name, n)
			}
		}
		if len(r.Params) == 0 {
			continue
		}
		cfg := RulesConfig{Rules: map[string]RuleConfig{r.ID: {Params: map[string]float64{}}}}
		for i, p := range r.Params {
			cfg.Rules[r.ID].Params[p.Name] = 1000 + float64(i)
		}
		active, err := cfg.Active()
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range active {
			if a.ID != r.ID {
				continue
			}
			for i, p := range r.Params {
				idx := params(r.Params).index(p.Name)
				paramUses[&r.Params[i]]-- // this test's own lookup
				if a.Values[idx] != 1000+float64(i) || a.Value(p.Name) != a.Values[idx] {
					t.Errorf("rule %s: %q set to %v reads %v", r.ID, p.Name, 1000+float64(i), a.Values[idx])
				}
			}
		}
	}
}
