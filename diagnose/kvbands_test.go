package diagnose

import "testing"

func TestKVBandsFollowConfig(t *testing.T) {
	def, err := RulesConfig{}.Active()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := KVBandsOf(def), (KVBands{Warn: 0.90, Crit: 0.95}); got != want || DefaultKVBands() != want {
		t.Errorf("default bands %+v (defaults %+v), want %+v", got, DefaultKVBands(), want)
	}
	for _, c := range []struct {
		name  string
		rules map[string]RuleConfig
		want  KVBands
	}{
		{"thrashing lower", map[string]RuleConfig{"kv_cache_thrashing": {Params: map[string]float64{"kv_high": 0.7}}}, KVBands{0.7, 0.95}},
		{"oom lower", map[string]RuleConfig{"oom_risk": {Params: map[string]float64{"kv_high": 0.8}}}, KVBands{0.8, 0.95}},
		{"saturated lower", map[string]RuleConfig{"kv_cache_saturated": {Params: map[string]float64{"kv_high": 0.85}}}, KVBands{0.85, 0.85}},
		{"disabled keeps its line", map[string]RuleConfig{"kv_cache_saturated": {Disabled: true, Params: map[string]float64{"kv_high": 0.98}}}, KVBands{0.90, 0.98}},
	} {
		d, err := NewDetector(RulesConfig{Rules: c.rules})
		if err != nil {
			t.Fatal(err)
		}
		f := &Frame{}
		if f.KV() != DefaultKVBands() {
			t.Errorf("a frame no detector saw: %+v", f.KV())
		}
		d.Evaluate(f)
		if got := f.KV(); got != c.want {
			t.Errorf("%s: frame bands %+v, want %+v", c.name, got, c.want)
		}
	}
}
