package sources

import "testing"

// TestSanitizeAll: every string a document holds is cleaned in place:
// nested structs, pointers, slices, map keys and values, an interface;
// bytes and unexported fields are left alone.
func TestSanitizeAll(t *testing.T) {
	type inner struct{ S string }
	type doc struct {
		A    string
		P    *inner
		L    []inner
		M    map[string]inner
		I    any
		B    []byte
		priv string
	}
	bad := "x\x1b]0;t\x07"
	d := doc{A: bad, P: &inner{bad}, L: []inner{{bad}}, M: map[string]inner{bad: {bad}}, I: inner{bad}, B: []byte(bad), priv: bad}
	SanitizeAll(&d, 0)
	want := `x\x1b]0;t\x07`
	if d.A != want || d.P.S != want || d.L[0].S != want || d.M[want].S != want || len(d.M) != 1 || d.I.(inner).S != want {
		t.Errorf("not all cleaned: %+v", d)
	}
	if string(d.B) != bad || d.priv != bad {
		t.Errorf("bytes or unexported state changed: %+v", d)
	}
	long := doc{A: "abcdefghij"}
	SanitizeAll(&long, 5)
	if long.A != "abcde…" {
		t.Errorf("cut: %q", long.A)
	}
}
