package sources

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLabelLen is the longest label value vtop keeps; longer values are cut
// with an ellipsis so one hostile value cannot flood a table or a report.
const MaxLabelLen = 120

// Sanitize makes text from a target safe to print: C0/C1 controls, DEL,
// bidi and other format characters, and invalid UTF-8 are escaped as \xNN or
// \u{NNNN}, and the result is cut to max runes, escapes counted as written, and an
// ellipsis (max <= 0: no cut). It runs
// once, at ingest: everything that leaves sources is already safe.
func Sanitize(s string, max int) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean && (max <= 0 || len(s) <= max) {
		return s
	}
	var b strings.Builder
	var esc [16]byte
	n := 0 // runes written
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var out []byte // an escape, all ASCII: its length is its runes
		switch {
		case r == utf8.RuneError && size == 1:
			out = strconv.AppendUint(append(esc[:0], `\x`...), uint64(s[i]), 16)
		case unsafeRune(r) && r < 0x10:
			out = strconv.AppendUint(append(esc[:0], `\x0`...), uint64(r), 16)
		case unsafeRune(r) && r < 0x100:
			out = strconv.AppendUint(append(esc[:0], `\x`...), uint64(r), 16)
		case unsafeRune(r):
			out = append(strconv.AppendUint(append(esc[:0], `\u{`...), uint64(r), 16), '}')
		}
		w := len(out)
		if out == nil {
			w = 1
		}
		// The cut counts what is written, escapes included: the result is
		// at most max runes and the ellipsis.
		if max > 0 && n+w > max {
			b.WriteString("…")
			break
		}
		if out != nil {
			b.Write(out)
		} else {
			b.WriteRune(r)
		}
		n += w
		i += size
	}
	return b.String()
}

// unsafeRune reports runes that can move the cursor, change terminal state or
// reorder text: C0 and C1 controls, DEL, and Unicode format characters (the
// bidi overrides and isolates are in Cf).
func unsafeRune(r rune) bool {
	if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
		return true
	}
	return unicode.Is(unicode.Cf, r) || r == 0x2028 || r == 0x2029
}

// KeyLabel is Sanitize for a label value that keys a sub-series: a value
// longer than max runes keeps a short hash of the whole value in its last
// runes, so two long names that share a prefix stay two sub-series instead of
// silently merging. The result is at most max+1 runes, like Sanitize's.
func KeyLabel(s string, max int) string {
	if max <= 10 {
		return Sanitize(s, max)
	}
	// Escapes make a value longer: it is cut (and hashed) by its escaped
	// length, so two long values with hostile bytes stay apart too.
	if out := Sanitize(s, 0); utf8.RuneCountInString(out) <= max {
		return out
	}
	h := fnv.New32a()
	h.Write([]byte(s))
	return Sanitize(s, max-9) + fmt.Sprintf("#%08x", h.Sum32())
}
