package report

import (
	"math"
	"testing"

	"github.com/vtop-dev/vtop/diagnose"
)

// Every unit a rule hands over is spelled here, unknown as "--" whatever
// the unit, and a percentile at its buckets' edge says it is a bound.
func TestEvidenceValue(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		e    diagnose.Evidence
		want string
	}{
		{diagnose.Evidence{Num: 0.97, Unit: diagnose.UnitRatio}, "97%"},
		{diagnose.Evidence{Num: 0.042, Unit: diagnose.UnitRatio}, "4.2%"},
		{diagnose.Evidence{Num: 0.82, Unit: diagnose.UnitSeconds}, "820ms"},
		{diagnose.Evidence{Num: 130, Unit: diagnose.UnitSeconds}, "2m10s"},
		{diagnose.Evidence{Num: 2560, Unit: diagnose.UnitSeconds, Lowest: 0.3, Highest: 2560}, "≥42m40s"},
		{diagnose.Evidence{Num: 0.1, Unit: diagnose.UnitSeconds, Lowest: 0.3, Highest: 2560}, "≤300ms"},
		{diagnose.Evidence{Num: 1.25, Unit: diagnose.UnitSeconds, Lowest: 0.3, Highest: 2560}, "1.25s"},
		{diagnose.Evidence{Num: 250, Unit: diagnose.UnitCount}, "250"},
		{diagnose.Evidence{Num: 12314, Unit: diagnose.UnitCount}, "12,314"},
		{diagnose.Evidence{Num: 2.5e6, Unit: diagnose.UnitCount}, "2.5M"},
		{diagnose.Evidence{Num: 0.5, Unit: diagnose.UnitCount}, "0.5"},
		{diagnose.Evidence{Num: 22, Unit: diagnose.UnitPerSec}, "22/s"},
		{diagnose.Evidence{Num: 4.5, Unit: diagnose.UnitReqPerSec}, "4.5 req/s"},
		{diagnose.Evidence{Num: 12400, Unit: diagnose.UnitTokPerSec}, "12k tokens/s"},
		{diagnose.Evidence{Num: 432000, Unit: diagnose.UnitTokens}, "432,000 tokens"},
		{diagnose.Evidence{Num: 1.5 * (1 << 30), Unit: diagnose.UnitBytes}, "1.5 GiB"},
		{diagnose.Evidence{Num: 1.4 * (1 << 30) / 60, Unit: diagnose.UnitBytesPerSec}, "1433.6 MiB/min"},
		{diagnose.Evidence{Num: 0.987, Unit: diagnose.UnitNumber}, "0.99"},
		{diagnose.Evidence{Num: 83, Unit: diagnose.UnitCelsius}, "83°C"},
		{diagnose.Evidence{Num: 350, Unit: diagnose.UnitWatts}, "350 W"},
		{diagnose.Evidence{Num: 1410, Unit: diagnose.UnitMHz}, "1410 MHz"},
		{diagnose.Evidence{Num: nan, Text: diagnose.Plain("V1 ≥0.8.4")}, "V1 ≥0.8.4"},
		{diagnose.Evidence{Num: nan, Unit: diagnose.UnitPerSec}, "--"},
		{diagnose.Evidence{Num: math.Inf(1), Unit: diagnose.UnitTokens}, "--"},
		{diagnose.Evidence{Num: nan, Unit: diagnose.UnitSeconds, Lowest: 0.3, Highest: 2560}, "--"},
	} {
		if got := EvidenceValue(c.e); got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
}
