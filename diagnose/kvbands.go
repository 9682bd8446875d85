package diagnose

import "math"

// KVBands are the KV usage levels the screens colour by. They come from
// the rules that judge the cache, so a threshold changed in the config
// file moves the colour with the finding: Warn is where the first KV rule
// starts to count the cache as full (the lower kv_high of
// kv_cache_thrashing and oom_risk), Crit where kv_cache_saturated counts
// it pinned (its kv_high).
type KVBands struct{ Warn, Crit float64 }

// KVBandsOf derives the bands from the active rules; a rule's threshold
// counts whether or not the rule is enabled (the colour still means
// "as full as that rule's line").
func KVBandsOf(rules []ActiveRule) KVBands {
	b := KVBands{Warn: math.Inf(1), Crit: math.NaN()}
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
func DefaultKVBands() KVBands {
	return KVBands{
		Warn: math.Min(kvtParams[kvtHigh].Default, oomParams[oomKVHigh].Default),
		Crit: ksParams[ksHigh].Default,
	}
}

// KV returns the bands the frame was judged by: the detector's, or the
// defaults for a frame no detector has seen yet.
func (f *Frame) KV() KVBands {
	if f == nil || f.KVBands.Crit == 0 {
		return DefaultKVBands()
	}
	return f.KVBands
}
