package sim

import (
	"math"
	"strconv"
)

// appendPyFloat formats v as prometheus_client's floatToGoString does:
// Python's repr (shortest round-trip digits, "246.0" for integers, exponent
// below 1e-4 and from 1e16), then Go-style exponents for positive values
// with more than six integer digits ("1.109622784e+09").
func appendPyFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	av := math.Abs(v)
	if av != 0 && (av < 1e-4 || av >= 1e16) {
		return strconv.AppendFloat(b, v, 'e', -1, 64)
	}
	start := len(b)
	b = strconv.AppendFloat(b, v, 'f', -1, 64)
	s := b[start:]
	dot := -1
	for i, c := range s {
		if c == '.' {
			dot = i
			break
		}
	}
	if dot < 0 {
		dot = len(s)
		b = append(b, ".0"...)
		s = b[start:]
	}
	if v <= 0 || dot <= 6 {
		return b
	}
	// mantissa: first digit, '.', the rest without the dot, trailing '0'
	// and '.' stripped; exponent "e+0" followed by dot-1, as the Python code
	// writes it (which is how "e+010" appears in real dumps).
	var tmp [40]byte
	m := append(tmp[:0], s[0], '.')
	m = append(m, s[1:dot]...)
	m = append(m, s[dot+1:]...)
	for len(m) > 0 && (m[len(m)-1] == '0' || m[len(m)-1] == '.') {
		m = m[:len(m)-1]
	}
	b = append(b[:start], m...)
	b = append(b, "e+0"...)
	return strconv.AppendInt(b, int64(dot-1), 10)
}
