package detect

// CausesOf lists every rule the cause graph says explains or restates
// rule id, for the external tests.
func CausesOf(id string) []string {
	var out []string
	for _, e := range causeGraph[id] {
		out = append(out, e.cause)
	}
	return out
}

// isolated is cfg with the rules that rule id restates disabled: a test
// of one rule's own thresholds and holds, without the more general rules
// it takes over from (issue 19: a specific rule fires at once in the
// place of a general one firing, and keeps its severity).
func isolated(cfg RulesConfig, id string) RulesConfig {
	if cfg.Rules == nil {
		cfg.Rules = map[string]RuleConfig{}
	}
	for rule, es := range causeGraph {
		for _, e := range es {
			if e.restates && e.cause == id {
				rc := cfg.Rules[rule]
				rc.Disabled = true
				cfg.Rules[rule] = rc
			}
		}
	}
	return cfg
}
