package detect

import (
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// prefixLost names a fall of the prefix-cache hit rate only where it can
// be the KV pressure's cause: before the pressure began, not come back,
// and to a level at which nothing a request shares matches. Prompts that
// grow around the same system prompt lower the rate (2k shared of 4.8k:
// 42 % → 10 % of more tokens) while each request still matches its 2k.
func TestPrefixLostOnlyWhenNothingMatches(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC)
	pressure := t0.Add(40 * time.Second)
	st := diagnose.Stats{ReqRate: 4, PrefixQueryRate: 4 * 4800}
	fall := func(after float64, onset time.Time, ended, accepted bool) diagnose.Shift {
		s := diagnose.Shift{Signal: diagnose.SigPrefixHit, Kind: diagnose.ShiftWorkload, Onset: onset, Before: 0.66, After: after, Accepted: accepted}
		if ended {
			s.Ended = onset.Add(time.Minute)
		}
		return s
	}
	for _, c := range []struct {
		name string
		s    diagnose.Shift
		want bool
	}{
		{"broken at the top", fall(0, t0, false, false), true},
		{"the new normal", fall(0.002, t0, true, true), true},
		{"longer prompts, the prefix still matched", fall(0.1, t0, false, false), false},
		{"after the pressure began", fall(0, pressure.Add(time.Second), false, false), false},
		{"came back", fall(0, t0, true, false), false},
		{"a fall too small", fall(0.5, t0, false, false), false},
	} {
		u := &unit{ep: &diagnose.EndpointView{Shifts: []diagnose.Shift{c.s}}, st: &st}
		if got := prefixLost(u, pressure) != nil; got != c.want {
			t.Errorf("%s: named %v, want %v", c.name, got, c.want)
		}
	}
}
