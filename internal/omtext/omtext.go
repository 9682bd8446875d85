// Package omtext rewrites a classic Prometheus text exposition as
// OpenMetrics 1.0, the way prometheus_client renders the same registry when
// asked for it (and vLLM's Rust frontend always does): a counter's family
// drops `_total` from its TYPE and HELP lines while its samples keep it
// (a counter named without it gets `_total` samples, as client_golang
// writes them); a
// `_created` gauge folds into its counter, histogram or summary as that
// family's `_created` sample, after the samples of the same label set;
// untyped is `unknown`; timestamps are seconds; `# EOF` ends the body. The
// tests use it to serve the real captures both ways.
package omtext

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ContentType is the fixed Content-Type an OpenMetrics-only server sends.
const ContentType = "application/openmetrics-text; version=1.0.0"

type sample struct {
	name, labels, rest string // rest: value and optional timestamp, as written
	group              string // the label set without le / quantile
}

type family struct {
	name, typ, help string
	hasHelp         bool
	samples         []sample
	created         []sample
}

// FromClassic converts body (text format 0.0.4) to OpenMetrics 1.0.
// A line that is not a sample stays as it was.
func FromClassic(body []byte) []byte {
	var fams []*family
	byName := map[string]*family{}
	get := func(name string) *family {
		if f := byName[name]; f != nil {
			return f
		}
		f := &family{name: name, typ: "untyped"}
		byName[name] = f
		fams = append(fams, f)
		return f
	}
	var cur *family
	for n, raw := range bytes.Split(body, []byte("\n")) {
		line := strings.TrimSpace(string(raw))
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "#"):
			parts := strings.SplitN(strings.TrimSpace(line[1:]), " ", 3)
			if len(parts) < 2 || (parts[0] != "HELP" && parts[0] != "TYPE") {
				continue // a comment
			}
			cur = get(parts[1])
			text := ""
			if len(parts) == 3 {
				text = parts[2]
			}
			if parts[0] == "TYPE" {
				cur.typ = text
			} else {
				cur.help, cur.hasHelp = text, true
			}
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			// A line the server printed broken (dcgm-exporter's "ERROR -
			// FAILED TO CONVERT TO STRING") stays as it was, where it was.
			if cur == nil {
				cur = get("")
			}
			cur.samples = append(cur.samples, sample{rest: line, group: "\x00" + strconv.Itoa(n)})
			continue
		}
		if cur == nil || !belongs(cur, s.name) {
			cur = get(s.name)
		}
		cur.samples = append(cur.samples, s)
	}
	// Fold each `X_created` gauge into the family it times.
	for _, f := range fams {
		base, ok := strings.CutSuffix(f.name, "_created")
		if !ok || f.typ != "gauge" {
			continue
		}
		owner := byName[base+"_total"]
		if owner == nil || owner.typ != "counter" {
			owner = byName[base]
		}
		if owner == nil || (owner.typ != "counter" && owner.typ != "histogram" && owner.typ != "summary") {
			continue
		}
		owner.created = append(owner.created, f.samples...)
		f.typ = "folded"
	}
	var b bytes.Buffer
	for _, f := range fams {
		if f.typ == "folded" {
			continue
		}
		name, typ := f.name, f.typ
		if name == "" { // broken lines before any family
			writeGrouped(&b, f)
			continue
		}
		switch typ {
		case "counter":
			if base, ok := strings.CutSuffix(name, "_total"); ok {
				name = base
			} else {
				// OpenMetrics has no counter sample without _total: a
				// client renders X's samples as X_total.
				for i := range f.samples {
					f.samples[i].name += "_total"
				}
			}
		case "untyped", "":
			typ = "unknown"
		}
		if f.hasHelp {
			fmt.Fprintf(&b, "# HELP %s %s\n", name, omHelp(f.help))
		}
		fmt.Fprintf(&b, "# TYPE %s %s\n", name, typ)
		writeGrouped(&b, f)
	}
	b.WriteString("# EOF\n")
	return b.Bytes()
}

// belongs: a sample of family f (X, X_total, X_bucket, X_count, X_sum, X_created).
func belongs(f *family, name string) bool {
	if name == f.name {
		return true
	}
	switch f.typ {
	case "histogram", "summary":
		for _, suf := range []string{"_bucket", "_count", "_sum", "_created"} {
			if name == f.name+suf {
				return true
			}
		}
	}
	return false
}

// writeGrouped writes a family's samples with each label set's `_created`
// after the last sample of that set.
func writeGrouped(b *bytes.Buffer, f *family) {
	last := map[string]int{}
	for i, s := range f.samples {
		last[s.group] = i
	}
	pending := map[string][]sample{}
	for _, c := range f.created {
		if _, ok := last[c.group]; ok {
			pending[c.group] = append(pending[c.group], c)
		}
	}
	for i, s := range f.samples {
		writeSample(b, s)
		if last[s.group] == i {
			for _, c := range pending[s.group] {
				writeSample(b, c)
			}
		}
	}
	// A creation time without other samples of its set stays, at the end.
	var orphans []sample
	for _, c := range f.created {
		if _, ok := last[c.group]; !ok {
			orphans = append(orphans, c)
		}
	}
	for _, c := range orphans {
		writeSample(b, c)
	}
}

func writeSample(b *bytes.Buffer, s sample) {
	if s.name == "" {
		b.WriteString(s.rest + "\n")
		return
	}
	b.WriteString(s.name)
	if s.labels != "" {
		b.WriteString("{" + s.labels + "}")
	}
	b.WriteString(" " + s.rest + "\n")
}

// omHelp re-escapes classic HELP text (\\ and \n) for OpenMetrics, which
// also escapes double quotes.
func omHelp(h string) string {
	var out strings.Builder
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c == '\\' && i+1 < len(h) && (h[i+1] == '\\' || h[i+1] == 'n'):
			out.WriteByte('\\')
			out.WriteByte(h[i+1])
			i++
		case c == '\\':
			out.WriteString(`\\`)
		case c == '"':
			out.WriteString(`\"`)
		default:
			out.WriteByte(c)
		}
	}
	return out.String()
}

// parseSample splits `name{labels} value [timestamp-ms]`; the timestamp
// becomes seconds.
func parseSample(line string) (sample, error) {
	var s sample
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return s, fmt.Errorf("no value: %q", line)
	}
	s.name = line[:i]
	rest := line[i:]
	var pairs [][2]string
	if rest[0] == '{' {
		var err error
		var n int
		pairs, n, err = parseLabels(rest)
		if err != nil {
			return s, err
		}
		s.labels = rest[1 : n-1]
		rest = rest[n:]
	}
	fields := strings.Fields(rest)
	switch len(fields) {
	case 1:
		s.rest = fields[0]
	case 2:
		ms, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return s, fmt.Errorf("timestamp %q: %v", fields[1], err)
		}
		s.rest = fields[0] + " " + strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
	default:
		return s, fmt.Errorf("bad sample: %q", line)
	}
	var keep []string
	for _, p := range pairs {
		if p[0] != "le" && p[0] != "quantile" {
			keep = append(keep, p[0]+"="+p[1])
		}
	}
	sort.Strings(keep)
	s.group = strings.Join(keep, ",")
	return s, nil
}

// parseLabels reads `{a="x",b="y"}` at the start of s: the pairs (values
// still quoted) and the length read.
func parseLabels(s string) ([][2]string, int, error) {
	var out [][2]string
	i := 1
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == ',') {
			i++
		}
		if i < len(s) && s[i] == '}' {
			return out, i + 1, nil
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return nil, 0, fmt.Errorf("bad labels: %q", s)
		}
		name := strings.TrimSpace(s[i : i+eq])
		j := i + eq + 1
		if j >= len(s) || s[j] != '"' {
			return nil, 0, fmt.Errorf("bad label value: %q", s)
		}
		k := j + 1
		for k < len(s) && s[k] != '"' {
			if s[k] == '\\' {
				k++
			}
			k++
		}
		if k >= len(s) {
			return nil, 0, fmt.Errorf("unterminated label value: %q", s)
		}
		out = append(out, [2]string{name, s[j : k+1]})
		i = k + 1
	}
}
