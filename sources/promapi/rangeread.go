package promapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	jsoniter "github.com/json-iterator/go"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// A backfill reads every vLLM series over hours: 200 replicas' hour is
// ~15 M points. Decoded as a model.Matrix, each value was parsed from the
// answer's text, formatted back into text for the normalizer and parsed
// once more there, each label set became a map, and every step walked
// 65,000 point slices scattered over the heap (half of vtop's CPU for the
// backfill). A rangePart keeps an answer the way a replica's exposition is
// rebuilt from it: each series' line start rendered once, and its values
// as the server wrote them, by step.

// rangePart is one range query's answer, stored by step: a step reads its
// series' values in order, not one cache miss each (stored by series, a
// step's values lay a whole row apart: half the backfill's CPU waited on
// memory).
type rangePart struct {
	steps  int
	series []rangeSeries
	at     [][]valRef // at[k][i]: series i at the k-th step (none past the end)
	text   [][]byte   // text[k]: the value texts at[k] points into
	lines  []byte     // line starts
}

// rangeSeries is one series of a rangePart.
type rangeSeries struct {
	key        string // its replica's identity (keyOf)
	line, size uint32 // its line start (name, labels but the target's, a space) in lines
}

// valRef is a value's text in its step's text; n == 0: no point.
type valRef struct {
	off uint32
	n   uint16
}

// lineOf is series i's line start.
func (p *rangePart) lineOf(i int) []byte {
	s := &p.series[i]
	return p.lines[s.line : s.line+s.size]
}

// ref is series i's value at step k; n == 0 when it has none.
func (p *rangePart) ref(i, k int) valRef {
	if i < len(p.at[k]) {
		return p.at[k][i]
	}
	return valRef{}
}

// value is series i's value text at step k, or nil.
func (p *rangePart) value(i, k int) []byte {
	v := p.ref(i, k)
	if v.n == 0 {
		return nil
	}
	return p.text[k][v.off : v.off+uint32(v.n)]
}

// add stores series i's value text at step k.
func (p *rangePart) add(i, k int, v []byte) {
	r, t := p.at[k], p.text[k]
	if len(r) <= i {
		r = append(r, make([]valRef, i+1-len(r))...)
	}
	r[i] = valRef{uint32(len(t)), uint16(len(v))}
	p.at[k], p.text[k] = r, append(t, v...)
}

// rangeSteps is how many steps a range query answers: start, start+step, …
// up to end.
func rangeSteps(r v1.Range) int {
	if r.Step <= 0 || r.End.Before(r.Start) {
		return 0
	}
	return int(r.End.Sub(r.Start)/r.Step) + 1
}

// readRange decodes a query_range answer into a rangePart in one pass.
// Points off the range's grid are not read (a step matches a point only at
// its own time, as model.Matrix was read before).
func readRange(body io.Reader, r v1.Range) (*rangePart, error) {
	p := &rangePart{steps: rangeSteps(r)}
	p.at, p.text = make([][]valRef, p.steps), make([][]byte, p.steps)
	start, step := r.Start.UnixMilli(), r.Step.Milliseconds()
	it := jsoniter.Parse(jsoniter.ConfigDefault, body, 64<<10)
	var status, errType, errMsg, resultType string
	var bad error
	var pairs []labelPair
	series := func(it *jsoniter.Iterator) bool {
		i := len(p.series)
		p.series = append(p.series, rangeSeries{})
		pairs = pairs[:0]
		it.ReadObjectCB(func(it *jsoniter.Iterator, field string) bool {
			switch field {
			case "metric":
				it.ReadObjectCB(func(it *jsoniter.Iterator, name string) bool {
					pairs = append(pairs, labelPair{validUTF8(name), validUTF8(it.ReadString())})
					return true
				})
			case "values":
				it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
					// A point must open with '[': json-iterator's ReadArray
					// also takes a ',' as "next", so [,0,"0"] read as a point
					// (FuzzReadRange found it).
					if it.WhatIsNext() != jsoniter.ArrayValue || !it.ReadArray() {
						bad = errors.New("a point is not [time, value]")
						return false
					}
					ms := int64(math.Round(it.ReadFloat64() * 1000))
					if !it.ReadArray() {
						bad = errors.New("a point is not [time, value]")
						return false
					}
					// Valid only until the iterator reads on.
					v := it.ReadStringAsSlice()
					if !plainValue(v) {
						bad = fmt.Errorf("value %q is not a number", v)
						return false
					}
					if k := (ms - start) / step; (ms-start)%step == 0 && k >= 0 && k < int64(p.steps) {
						p.add(i, int(k), v)
					}
					if it.ReadArray() {
						bad = errors.New("a point is not [time, value]")
						return false
					}
					return true
				})
			default:
				it.Skip()
			}
			return bad == nil
		})
		s := &p.series[i]
		s.key = pairsKey(pairs)
		s.line = uint32(len(p.lines))
		p.lines = appendPairs(p.lines, pairs)
		s.size = uint32(len(p.lines)) - s.line
		return bad == nil
	}
	it.ReadObjectCB(func(it *jsoniter.Iterator, field string) bool {
		switch field {
		case "status":
			status = it.ReadString()
		case "errorType":
			errType = it.ReadString()
		case "error":
			errMsg = it.ReadString()
		case "data":
			it.ReadObjectCB(func(it *jsoniter.Iterator, field string) bool {
				switch field {
				case "resultType":
					resultType = it.ReadString()
				case "result":
					if resultType != "" && resultType != "matrix" {
						it.Skip()
						return true
					}
					it.ReadArrayCB(series)
				default:
					it.Skip()
				}
				return bad == nil
			})
		default:
			it.Skip()
		}
		return bad == nil
	})
	if bad != nil {
		return nil, bad
	}
	if it.Error == nil {
		// One document and nothing after it but space: two answers run
		// together, or a proxy's page after one, are not an answer.
		if it.WhatIsNext(); it.Error == nil {
			return nil, errors.New("more after the answer: not one JSON document")
		}
	}
	if it.Error != nil && it.Error != io.EOF {
		return nil, it.Error
	}
	if len(p.lines) > math.MaxUint32 || slices.ContainsFunc(p.text, func(t []byte) bool { return len(t) > math.MaxUint32 }) {
		return nil, errors.New("answer too large")
	}
	if status != "success" {
		if status == "" {
			return nil, errors.New("no status in the answer")
		}
		return nil, fmt.Errorf("%s: %s", errType, errMsg)
	}
	if resultType != "matrix" {
		return nil, fmt.Errorf("got a %s, not a range", resultType)
	}
	return p, nil
}

// plainValue reports whether a value's text is one the text format reads
// as written: a decimal number, NaN or ±Inf (what Prometheus and
// VictoriaMetrics write), nothing that could end the line or add to it.
func plainValue(v []byte) bool {
	switch string(v) {
	case "NaN", "+Inf", "-Inf", "Inf":
		return true
	}
	if len(v) == 0 || len(v) > math.MaxUint16 {
		return false
	}
	for _, c := range v {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return false
		}
	}
	return true
}

// labelPair is one label of a decoded series.
type labelPair struct{ name, value string }

// pairsKey is keyOf for a decoded series' labels.
func pairsKey(pairs []labelPair) string {
	var vals [5]string
	for _, l := range pairs {
		if i := isID([]byte(l.name)); i >= 0 {
			vals[i] = l.value
		}
	}
	var b strings.Builder
	for _, v := range vals {
		b.WriteString(v)
		b.WriteByte(0xff)
	}
	return b.String()
}

// metricOfKey is the identifying labels a key was made of.
func metricOfKey(key string) model.Metric {
	m := model.Metric{}
	for i, v := range strings.SplitN(key, "\xff", len(idLabels)+1)[:len(idLabels)] {
		if v != "" {
			m[idLabels[i]] = model.LabelValue(v)
		}
	}
	return m
}

// seriesRef is a series of a chunk: which answer, which series in it.
type seriesRef struct {
	p *rangePart
	i int
}

// slotted is a replica's exposition over one chunk: its lines with a
// value slot each, as wide as the series' widest value in the chunk.
type slotted struct {
	text  []byte
	refs  []seriesRef
	slots []int // where each series' value slot starts in text
	width []int
}

// slotted writes the exposition of a replica's series, value slots blank.
func (s *Source) slotted(refs []seriesRef) *slotted {
	b := &slotted{text: s.fleet.header(nil), refs: refs}
	for _, r := range refs {
		w := 0
		for k := range r.p.steps {
			w = max(w, int(r.p.ref(r.i, k).n))
		}
		b.text = append(b.text, r.p.lineOf(r.i)...)
		b.slots, b.width = append(b.slots, len(b.text)), append(b.width, w)
		b.text = append(b.text, bytes.Repeat([]byte{' '}, w)...)
		b.text = append(b.text, '\n')
	}
	return b
}

// fill writes step k's values into the slots and returns the text, or nil
// when a series has no point at k.
func (b *slotted) fill(k int) []byte {
	for _, r := range b.refs {
		if r.p.ref(r.i, k).n == 0 {
			return nil
		}
	}
	for j, r := range b.refs {
		slot := b.text[b.slots[j] : b.slots[j]+b.width[j]]
		for x := copy(slot, r.p.value(r.i, k)); x < len(slot); x++ {
			slot[x] = ' '
		}
	}
	return b.text
}

// validUTF8 replaces each byte that is not UTF-8 with U+FFFD, as
// encoding/json (and so Prometheus' own client) decodes a JSON string;
// json-iterator keeps such bytes as they came (FuzzReadRange found it).
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
