package detect

import (
	"math"

	"github.com/vtop-dev/vtop/diagnose"
)

// KVBandsOf derives the bands from the active rules; a rule's threshold
// counts whether or not the rule is enabled (the colour still means
// "as full as that rule's line").
func KVBandsOf(rules []ActiveRule) diagnose.KVBands {
	b := diagnose.KVBands{Warn: math.Inf(1), Crit: math.NaN()}
	for i := range rules {
		r := &rules[i]
		switch r.ID {
		case ruleKVThrashing.ID, ruleOOMRisk.ID:
			b.Warn = math.Min(b.Warn, r.Value("kv_high"))
		case ruleKVSaturated.ID:
			b.Crit = r.Value("kv_high")
		}
	}
	if math.IsNaN(b.Crit) || math.IsInf(b.Warn, 1) {
		return DefaultKVBands()
	}
	b.Warn = math.Min(b.Warn, b.Crit) // a lowered crit line pulls the warn line with it
	return b
}

// DefaultKVBands are the bands of the rules' default thresholds.
func DefaultKVBands() diagnose.KVBands {
	return diagnose.KVBands{
		Warn: math.Min(kvtParams[kvtHigh].Default, oomParams[oomKVHigh].Default),
		Crit: ksParams[ksHigh].Default,
	}
}
