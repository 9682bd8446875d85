package sim

import (
	"math"
	"testing"
)

// Values as prometheus_client writes them, taken from the captures.
func TestAppendPyFloat(t *testing.T) {
	for v, want := range map[float64]string{
		0:                     "0.0",
		246:                   "246.0",
		14.040000000000001:    "14.040000000000001",
		0.0011764705882353343: "0.0011764705882353343",
		1.109622784e9:         "1.109622784e+09",
		1.372014592e10:        "1.372014592e+010",
		1.7710424574207425e9:  "1.7710424574207425e+09",
		1.048576e6:            "1.048576e+06",
		1e6:                   "1e+06",
		999999:                "999999.0",
		2560:                  "2560.0",
		20000:                 "20000.0",
		0.001:                 "0.001",
		1e-05:                 "1e-05",
		-1:                    "-1.0",
		math.Inf(1):           "+Inf",
	} {
		if got := string(appendPyFloat(nil, v)); got != want {
			t.Errorf("%v: %q, want %q", v, got, want)
		}
	}
}

func TestAppendPyRepr(t *testing.T) {
	for v, want := range map[float64]string{4294967296: "4294967296.0", 0.9: "0.9", 4: "4.0", 1e16: "1e+16"} {
		if got := string(appendPyRepr(nil, v)); got != want {
			t.Errorf("%v: %q, want %q", v, got, want)
		}
	}
}
