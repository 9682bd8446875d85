// Package jsonsplice writes a table's numbers into a JSON object that
// encoding/json wrote for a struct's other members: the recording's GPU
// record, the report's GPUs and its endpoint values keep their numbers in a
// field table (sources.GPUFields, diagnose.StatFields) rather than in
// struct fields, and this is the one loop that places them.
package jsonsplice

import "bytes"

// Insert returns obj, a compact JSON object, with n members inserted
// before the first of the members named in before that obj has, or before
// its closing brace when it has none of them. member(dst, i) appends the
// i-th member's "key":value. A key is found as `"key":` right after '{' or
// ',': inside a string every quote is escaped, so that is a member of obj
// or of an object nested in a member before it (which the callers' members
// are not).
func Insert(obj []byte, n int, member func(dst []byte, i int) []byte, before ...string) []byte {
	p := len(obj) - 1 // the closing brace
	for _, k := range before {
		if i := memberAt(obj, k); i > 0 {
			p = i
			break
		}
	}
	out := make([]byte, 0, len(obj)+n*24)
	out = append(out, obj[:p]...)
	end := obj[p] == '}'
	for i := range n {
		if end && (i > 0 || obj[p-1] != '{') {
			out = append(out, ',')
		}
		out = member(out, i)
		if !end {
			out = append(out, ',')
		}
	}
	return append(out, obj[p:]...)
}

// memberAt is the offset of the quote opening member key in obj, or -1.
func memberAt(obj []byte, key string) int {
	pat := make([]byte, 0, len(key)+3)
	pat = append(append(append(pat, '"'), key...), '"', ':')
	for off := 0; ; {
		i := bytes.Index(obj[off:], pat)
		if i < 0 {
			return -1
		}
		if at := off + i; at > 0 && (obj[at-1] == '{' || obj[at-1] == ',') {
			return at
		}
		off += i + 1
	}
}

// Member appends "key":val.
func Member(dst []byte, key string, val []byte) []byte {
	dst = append(append(append(dst, '"'), key...), '"', ':')
	return append(dst, val...)
}
