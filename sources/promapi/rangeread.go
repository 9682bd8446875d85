package promapi

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

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

// rangePart is one range query's answer.
type rangePart struct {
	steps  int
	series []rangeSeries
	// vals holds each series' values by step: vals[i*steps+k] is series
	// i at the range's k-th step.
	vals  []valRef
	arena []byte // value texts and line starts
}

// rangeSeries is one series of a rangePart.
type rangeSeries struct {
	key        string // its replica's identity (keyOf)
	line, size uint32 // its line start (name, labels but the target's, a space) in arena
}

// valRef is a value's text in arena; n == 0: no point at that step.
type valRef struct {
	off uint32
	n   uint16
}

// lineOf is series i's line start.
func (p *rangePart) lineOf(i int) []byte {
	s := &p.series[i]
	return p.arena[s.line : s.line+s.size]
}

// value is series i's value text at step k, or nil.
func (p *rangePart) value(i, k int) []byte {
	v := p.vals[i*p.steps+k]
	if v.n == 0 {
		return nil
	}
	return p.arena[v.off : v.off+uint32(v.n)]
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
	start, step := r.Start.UnixMilli(), r.Step.Milliseconds()
	it := jsoniter.Parse(jsoniter.ConfigDefault, body, 64<<10)
	var status, errType, errMsg, resultType string
	var bad error
	var pairs []labelPair
	series := func(it *jsoniter.Iterator) bool {
		i := len(p.series)
		p.series = append(p.series, rangeSeries{})
		p.vals = append(p.vals, make([]valRef, p.steps)...)
		row := p.vals[i*p.steps : (i+1)*p.steps]
		pairs = pairs[:0]
		it.ReadObjectCB(func(it *jsoniter.Iterator, field string) bool {
			switch field {
			case "metric":
				it.ReadObjectCB(func(it *jsoniter.Iterator, name string) bool {
					pairs = append(pairs, labelPair{name, it.ReadString()})
					return true
				})
			case "values":
				it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
					if !it.ReadArray() {
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
					if k := (ms - start) / step; (ms-start)%step == 0 && k >= 0 && k < int64(len(row)) {
						row[k] = valRef{uint32(len(p.arena)), uint16(len(v))}
						p.arena = append(p.arena, v...)
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
		s.line = uint32(len(p.arena))
		p.arena = appendPairs(p.arena, pairs)
		s.size = uint32(len(p.arena)) - s.line
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
	if it.Error != nil && it.Error != io.EOF {
		return nil, it.Error
	}
	if len(p.arena) > math.MaxUint32 {
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
