package diagnose

// KVBands are the KV usage levels the screens colour by. They come from
// the rules that judge the cache, so a threshold changed in the config
// file moves the colour with the finding: Warn is where the first KV rule
// starts to count the cache as full (the lower kv_high of
// kv_cache_thrashing and oom_risk), Crit where kv_cache_saturated counts
// it pinned (its kv_high).
type KVBands struct{ Warn, Crit float64 }

// KVBandsDefault are the bands of the rules' default thresholds (detect
// holds its rules' defaults to them), for a frame no detector has judged.
var KVBandsDefault = KVBands{Warn: 0.90, Crit: 0.95}

// KV returns the bands the frame was judged by: the detector's, or the
// defaults for a frame no detector has seen yet.
func (f *Frame) KV() KVBands {
	if f == nil || f.KVBands.Crit == 0 {
		return KVBandsDefault
	}
	return f.KVBands
}
