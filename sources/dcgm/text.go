package dcgm

import (
	"bytes"
	"strconv"
)

// ParseText reads a dcgm-exporter /metrics body into r (between Begin and
// End). The exporter prints values it cannot convert as text ("ERROR -
// FAILED TO CONVERT TO STRING") and label values with spaces, so lines are
// read one by one and a bad line costs only itself; it returns how many
// were skipped.
func (r *Reader) ParseText(body []byte, instanceHost string) (skipped int) {
	var lbls [][2]string
	label := func(n string) string {
		for _, l := range lbls {
			if l[0] == n {
				return l[1]
			}
		}
		return ""
	}
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		name, rest, ok := cutName(line)
		if ok && !Known(string(name)) {
			// OpenMetrics writes a counter's samples with _total
			// (DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS_total).
			name, ok = bytes.CutSuffix(name, []byte("_total"))
		}
		if !ok || !Known(string(name)) {
			continue
		}
		lbls = lbls[:0]
		if len(rest) > 0 && rest[0] == '{' {
			if lbls, rest, ok = parseLabels(rest[1:], lbls); !ok {
				skipped++
				continue
			}
		}
		fs := bytes.Fields(rest)
		if len(fs) == 0 {
			skipped++
			continue
		}
		v, err := strconv.ParseFloat(string(fs[0]), 64)
		if err != nil {
			skipped++
			continue
		}
		r.Add(string(name), label, v, instanceHost)
	}
	return skipped
}

func cutName(line []byte) (name, rest []byte, ok bool) {
	i := bytes.IndexAny(line, "{ ")
	if i <= 0 {
		return nil, nil, false
	}
	return line[:i], line[i:], true
}

// parseLabels reads k="v",… up to the closing brace.
func parseLabels(b []byte, out [][2]string) ([][2]string, []byte, bool) {
	for {
		b = bytes.TrimLeft(b, " ,")
		if len(b) == 0 {
			return out, nil, false
		}
		if b[0] == '}' {
			return out, b[1:], true
		}
		eq := bytes.IndexByte(b, '=')
		if eq <= 0 || eq+1 >= len(b) || b[eq+1] != '"' {
			return out, nil, false
		}
		key := string(bytes.TrimSpace(b[:eq]))
		b = b[eq+2:]
		var val []byte
		for i := 0; ; i++ {
			if i >= len(b) {
				return out, nil, false
			}
			c := b[i]
			if c == '\\' && i+1 < len(b) {
				i++
				switch b[i] {
				case 'n':
					val = append(val, '\n')
				default:
					val = append(val, b[i])
				}
				continue
			}
			if c == '"' {
				b = b[i+1:]
				break
			}
			val = append(val, c)
		}
		out = append(out, [2]string{key, string(val)})
	}
}
