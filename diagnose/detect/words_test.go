package detect

import (
	"strings"
	"testing"
)

// TestAbsurdNumbersInFindings: a bucket bound of 1e300 once rendered as
// "-2562047788015215h" in a critical finding; findings' words stay sane for
// any float64.
func TestAbsurdNumbersInFindings(t *testing.T) {
	for _, s := range []string{spell(secs(1e300)), spell(dur(seconds(1e300))), spell(grouped(1e300)), spell(grouped(-1e300)), spell(FormatParam(Param{Unit: "s"}, 1e300))} {
		if strings.HasPrefix(s, "-") && s != "-1.0e+300" || len(s) > 12 {
			t.Errorf("rendered %q", s)
		}
	}
}
