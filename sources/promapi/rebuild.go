package promapi

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vtop-dev/vtop/sources"
)

// idLabels identify a replica among a server's series; the other target
// labels a scrape config adds are dropped from the rebuilt exposition.
var idLabels = []model.LabelName{"cluster", "namespace", "pod", "job", "instance"}

// replica is one vLLM server the TSDB holds series of.
type replica struct {
	key  string
	name string
	host string
	ns   string
	pod  string
	norm *sources.Normalizer
	buf  []byte
	last time.Time // newest sample time handed on
	seen uint64    // the refresh that last saw it
}

// fleet is the replicas known so far, by identity.
type fleet struct {
	byKey  map[string]*replica
	byName map[string]*replica
	help   map[string]string
}

func newFleet(help map[string]string) *fleet {
	return &fleet{byKey: map[string]*replica{}, byName: map[string]*replica{}, help: help}
}

// keyOf renders the identity of a series' replica.
func keyOf(m model.Metric) string {
	var b strings.Builder
	for _, l := range idLabels {
		b.WriteString(string(m[l]))
		b.WriteByte(0xff)
	}
	return b.String()
}

// get returns the replica of a series, adding it (and reporting so) the
// first time.
func (f *fleet) get(m model.Metric) (*replica, bool) {
	k := keyOf(m)
	if r := f.byKey[k]; r != nil {
		return r, false
	}
	name := string(m["instance"])
	if pod := m["pod"]; pod != "" {
		name = string(pod)
		if ns := m["namespace"]; ns != "" {
			name = string(ns) + "/" + name
		}
	}
	if cl := m["cluster"]; cl != "" {
		name = string(cl) + "/" + name
	}
	if name == "" {
		name = string(m["job"])
	}
	name = sources.Sanitize(name, 120)
	if f.byName[name] != nil {
		name += " (" + sources.Sanitize(string(m["job"]), 40) + ")"
	}
	for base, n := name, 2; f.byName[name] != nil; n++ {
		name = base + " #" + strconv.Itoa(n)
	}
	host := string(m["instance"])
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	r := &replica{key: k, name: name, host: host, ns: string(m["namespace"]), pod: string(m["pod"]), norm: sources.NewNormalizer()}
	f.byKey[k], f.byName[name] = r, r
	return r, true
}

// drop forgets a replica.
func (f *fleet) drop(r *replica) {
	delete(f.byKey, r.key)
	delete(f.byName, r.name)
}

// target is what the pipeline is told about a replica.
func (r *replica) target() sources.Target {
	return sources.Target{Name: r.name, Host: r.host, Pod: sources.Sanitize(r.pod, 120), Namespace: sources.Sanitize(r.ns, 120)}
}

// begin starts a rebuilt exposition.
func (f *fleet) begin(r *replica) { r.buf = f.header(r.buf[:0]) }

// header is what every rebuilt exposition starts with: the running
// gauge's HELP (which tells V0 from V1) when the server keeps it.
func (f *fleet) header(b []byte) []byte {
	if h, ok := f.help["vllm:num_requests_running"]; ok {
		b = append(b, "# HELP vllm:num_requests_running "...)
		b = appendEscaped(b, h, false)
		b = append(b, '\n')
	}
	return b
}

// appendSample adds one sample line without the target's labels.
func appendSample(b []byte, m model.Metric, v float64, scratch *[]labelPair) []byte {
	return appendValue(appendSeries(b, m, scratch), v)
}

// appendSeries writes a series as a sample line starts: the name and the
// labels but the target's, sorted, so a series renders the same every
// time and the normalizer's series cache hits.
func appendSeries(b []byte, m model.Metric, scratch *[]labelPair) []byte {
	pairs := (*scratch)[:0]
	for l, v := range m {
		pairs = append(pairs, labelPair{string(l), string(v)})
	}
	*scratch = pairs
	return appendPairs(b, pairs)
}

// appendPairs is appendSeries for labels as decoded; it sorts pairs.
func appendPairs(b []byte, pairs []labelPair) []byte {
	slices.SortFunc(pairs, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
	for _, l := range pairs {
		if l.name == model.MetricNameLabel {
			b = append(b, l.value...)
		}
	}
	b = append(b, '{')
	n := 0
	for _, l := range pairs {
		if isTarget([]byte(l.name)) {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, l.name...)
		b = append(b, '=', '"')
		b = appendEscaped(b, l.value, true)
		b = append(b, '"')
		n++
	}
	return append(b, '}', ' ')
}

// appendValue ends a sample line.
func appendValue(b []byte, v float64) []byte {
	b = strconv.AppendFloat(b, v, 'g', -1, 64)
	return append(b, '\n')
}

// appendEscaped escapes as the text format wants: backslash and newline,
// and the quote inside label values.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '"' && quote:
			b = append(b, '\\', '"')
		default:
			b = append(b, c)
		}
	}
	return b
}

// rebuiltType is the Content-Type of a rebuilt exposition.
const rebuiltType = "text/plain; version=0.0.4"

// normalize reads one exposition of the replica, stamped t; keep hands on
// what a recording needs of the text too (its changed lines, as the
// poller does).
func (r *replica) normalize(body []byte, t time.Time, keep bool) sources.Scrape {
	s := sources.Scrape{Target: r.name, Time: t}
	snap, err := r.norm.Normalize(body, rebuiltType)
	if err != nil {
		s.Err = err
		return s
	}
	s.Data = snap
	if keep {
		s.KeepBody(r.norm, body, rebuiltType)
	}
	return s
}
