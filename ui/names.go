package ui

import "strings"

// Endpoint names in a fleet share long prefixes and suffixes (pod names,
// host domains, the port): the table shows what tells them apart, the
// endpoint view and the help show the full name.

// nameSeps are where a shared part may be cut.
const nameSeps = "-._/:"

// shortNames drops the longest prefix and suffix every name shares, cut
// at a separator, when what is left is unique and not empty; it returns
// the short names (indexed like names) and the parts dropped.
func shortNames(names []string) (short []string, prefix, suffix string) {
	short = names
	if len(names) < 2 {
		return short, "", ""
	}
	prefix, suffix = names[0], names[0]
	for _, n := range names[1:] {
		prefix = commonPrefix(prefix, n)
		suffix = commonSuffix(suffix, n)
	}
	// Cut back to a separator, so "replica-1"/"replica-2" keep their number
	// whole and "a-10"/"a-11" do not become "0"/"1".
	if i := strings.LastIndexAny(prefix, nameSeps); i >= 0 {
		prefix = prefix[:i+1]
	} else {
		prefix = ""
	}
	if i := strings.IndexAny(suffix, nameSeps); i >= 0 {
		suffix = suffix[i:]
	} else {
		suffix = ""
	}
	// A bare number says little: "node-1" for "gpu-node-1", ":8001" for a port.
	if allDigitsAfter(names, len(prefix)+1, len(suffix)) && prefix != "" {
		if strings.HasSuffix(prefix, ":") {
			prefix = prefix[:len(prefix)-1]
		} else if i := strings.LastIndexAny(prefix[:len(prefix)-1], nameSeps); i >= 0 {
			prefix = prefix[:i+1]
		} else {
			prefix = ""
		}
	}
	// Worth it only when it saves a few cells.
	if len(prefix)+len(suffix) < 8 {
		return names, "", ""
	}
	out := make([]string, len(names))
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		s := n[len(prefix):]
		if len(s) < len(suffix) {
			return names, "", ""
		}
		s = s[:len(s)-len(suffix)]
		if s == "" || seen[s] {
			return names, "", ""
		}
		seen[s] = true
		out[i] = s
	}
	return out, prefix, suffix
}

func commonPrefix(a, b string) string {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return a[:i]
		}
	}
	return a[:n]
}

func commonSuffix(a, b string) string {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[len(a)-1-i] != b[len(b)-1-i] {
			return a[len(a)-i:]
		}
	}
	return a[len(a)-n:]
}

// allDigitsAfter: every name, less from-1 leading and suffix trailing
// bytes, is digits only (the part a prefix cut would leave).
func allDigitsAfter(names []string, from, suffix int) bool {
	for _, n := range names {
		if from-1 > len(n)-suffix {
			return false
		}
		rest := n[from-1 : len(n)-suffix]
		if rest == "" || strings.Trim(rest, "0123456789") != "" {
			return false
		}
	}
	return true
}
