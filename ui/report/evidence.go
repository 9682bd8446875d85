package report

import (
	"math"

	"github.com/vtop-dev/vtop/diagnose"
	f "github.com/vtop-dev/vtop/ui/format"
)

// EvidenceValue is a finding's evidence as the terminal shows it: the
// rules hand over numbers with units, and this is the one place that
// spells them ("97%", "22/s", "≥2.56s", "1.4 GiB", "--" when unknown).
func EvidenceValue(e diagnose.Evidence) string {
	v := e.Num
	if e.Unit != diagnose.UnitText && (math.IsNaN(v) || math.IsInf(v, 0)) {
		return f.Missing // NaN or ±Inf: unknown, whatever the unit
	}
	switch e.Unit {
	case diagnose.UnitText:
		return f.Say(e.Text)
	case diagnose.UnitRatio:
		return f.Percent(v)
	case diagnose.UnitSeconds:
		if e.Quantile() {
			return f.Quantile(v, e.Lowest, e.Highest)
		}
		return f.Seconds(v)
	case diagnose.UnitPerSec:
		return f.SI(v) + "/s"
	case diagnose.UnitReqPerSec, diagnose.UnitTokPerSec:
		return f.SI(v) + " " + string(e.Unit)
	case diagnose.UnitTokens:
		return f.Grouped(v) + " tokens"
	case diagnose.UnitBytes:
		return f.Mem(v)
	case diagnose.UnitBytesPerSec:
		return f.Dec(v*60/(1<<20), 1) + " MiB/min"
	case diagnose.UnitNumber:
		return f.Dec(v, 2)
	case diagnose.UnitCelsius:
		return f.Dec(v, 0) + "°C"
	case diagnose.UnitWatts, diagnose.UnitMHz:
		return f.Dec(v, 0) + " " + string(e.Unit)
	}
	// UnitCount, and a unit newer than this switch. A whole count under a
	// million is written out: the flag arithmetic beside it quotes it so
	// ("12,314 blocks"), and "12k" would not visibly agree with it.
	if v == math.Trunc(v) && math.Abs(v) < 1e6 {
		return f.Grouped(v)
	}
	return f.SI(v)
}
