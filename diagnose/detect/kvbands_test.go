package detect

import (
	"testing"

	"github.com/vtop-dev/vtop/diagnose"
)

func TestKVBandsFollowConfig(t *testing.T) {
	def, err := RulesConfig{}.Active()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := KVBandsOf(def), (diagnose.KVBands{Warn: 0.90, Crit: 0.95}); got != want || DefaultKVBands() != want {
		t.Errorf("default bands %+v (defaults %+v), want %+v", got, DefaultKVBands(), want)
	}
	for _, c := range []struct {
		name  string
		rules map[string]RuleConfig
		want  diagnose.KVBands
	}{
		{"thrashing lower", map[string]RuleConfig{"kv_cache_thrashing": {Params: map[string]float64{"kv_high": 0.7}}}, diagnose.KVBands{Warn: 0.7, Crit: 0.95}},
		{"oom lower", map[string]RuleConfig{"oom_risk": {Params: map[string]float64{"kv_high": 0.8}}}, diagnose.KVBands{Warn: 0.8, Crit: 0.95}},
		{"saturated lower", map[string]RuleConfig{"kv_cache_saturated": {Params: map[string]float64{"kv_high": 0.85}}}, diagnose.KVBands{Warn: 0.85, Crit: 0.85}},
		{"disabled keeps its line", map[string]RuleConfig{"kv_cache_saturated": {Disabled: true, Params: map[string]float64{"kv_high": 0.98}}}, diagnose.KVBands{Warn: 0.90, Crit: 0.98}},
	} {
		d, err := NewDetector(RulesConfig{Rules: c.rules})
		if err != nil {
			t.Fatal(err)
		}
		f := &diagnose.Frame{}
		if f.KV() != DefaultKVBands() {
			t.Errorf("a frame no detector saw: %+v", f.KV())
		}
		d.Evaluate(f)
		if got := f.KV(); got != c.want {
			t.Errorf("%s: frame bands %+v, want %+v", c.name, got, c.want)
		}
	}
}
