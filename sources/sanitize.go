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
// \u{NNNN}, and the result is cut to max runes (max <= 0: no cut). It runs
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
	n := 0
	for i := 0; i < len(s); {
		if max > 0 && n >= max {
			b.WriteString("…")
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i]), 16))
		case unsafeRune(r):
			if r < 0x100 {
				b.WriteString(`\x`)
				if r < 0x10 {
					b.WriteByte('0')
				}
				b.WriteString(strconv.FormatUint(uint64(r), 16))
			} else {
				b.WriteString(`\u{`)
				b.WriteString(strconv.FormatUint(uint64(r), 16))
				b.WriteByte('}')
			}
		default:
			b.WriteRune(r)
		}
		n++
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
	if max <= 10 || utf8.RuneCountInString(s) <= max {
		return Sanitize(s, max)
	}
	h := fnv.New32a()
	h.Write([]byte(s))
	return Sanitize(s, max-9) + fmt.Sprintf("#%08x", h.Sum32())
}
