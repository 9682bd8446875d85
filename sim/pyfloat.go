package sim

import (
	"math"
	"strconv"
)

// appendPyRepr formats v as Python's repr (and str) of a float: shortest
// round-trip digits, "246.0" for integers, an exponent below 1e-4 and from
// 1e16. Label values such as swap_space_bytes="4294967296.0" are written so.
func appendPyRepr(b []byte, v float64) []byte {
	b, _ = pyRepr(b, v)
	return b
}

// pyRepr appends repr(v) and returns where its decimal point is (-1 when
// it is not a plain decimal).
func pyRepr(b []byte, v float64) ([]byte, int) {
	switch {
	case math.IsInf(v, 1):
		return append(b, "inf"...), -1
	case math.IsInf(v, -1):
		return append(b, "-inf"...), -1
	case math.IsNaN(v):
		return append(b, "nan"...), -1
	}
	av := math.Abs(v)
	if av != 0 && (av < 1e-4 || av >= 1e16) {
		return strconv.AppendFloat(b, v, 'e', -1, 64), -1
	}
	start := len(b)
	b = strconv.AppendFloat(b, v, 'f', -1, 64)
	for i, c := range b[start:] {
		if c == '.' {
			return b, i
		}
	}
	dot := len(b) - start
	return append(b, ".0"...), dot
}

// appendPyFloat formats v as prometheus_client's floatToGoString does for
// sample values and le bounds: Python's repr, then Go-style exponents for
// positive values with more than six integer digits ("1.109622784e+09").
func appendPyFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	start := len(b)
	b, dot := pyRepr(b, v)
	s := b[start:]
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
