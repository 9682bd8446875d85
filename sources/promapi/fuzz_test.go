package promapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// parserPanics are the inputs that made Prometheus' text parsers panic in
// 2026, kept as seeds of every fuzzer that reads exposition text.
var parserPanics = []string{"{A}0", "{A} 0", "#", `o{="foo"} 0`}

// textSamples is what Prometheus' own text parser reads from in: one
// "target key|series without the target's labels|value bits" per sample
// (with keyed, only of the series carrying some target label); ok is
// false when it cannot read all of in.
func textSamples(in []byte, keyed bool) (out []string, ok bool) {
	p, err := textparse.New(in, "text/plain; version=0.0.4", labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil {
		return nil, false
	}
	for {
		e, err := p.Next()
		if err != nil {
			return out, err.Error() == "EOF"
		}
		if e != textparse.EntrySeries {
			continue
		}
		_, _, v := p.Series()
		var ls labels.Labels
		p.Labels(&ls)
		m := model.Metric{}
		var ser []string
		ls.Range(func(l labels.Label) {
			if isID([]byte(l.Name)) >= 0 {
				m[model.LabelName(l.Name)] = model.LabelValue(l.Value)
			}
			if l.Name == model.MetricNameLabel || !isTarget([]byte(l.Name)) {
				ser = append(ser, l.Name+"="+strconv.Quote(l.Value))
			}
		})
		if keyed && keyOf(m) == keyOf(nil) {
			continue // an empty label is no label
		}
		if math.IsNaN(v) {
			v = math.NaN() // one NaN: the splitter keeps the text, not the bits
		}
		out = append(out, keyOf(m)+"|"+strings.Join(ser, ",")+"|"+strconv.FormatUint(math.Float64bits(v), 16))
	}
}

// FuzzFederationSplit: whatever Prometheus' text parser reads from a
// /federate answer, the splitter files under the same targets with the
// same series and values (read back from each target's rebuilt text by
// the same parser). What the parser refuses may be refused or read
// otherwise, but never panics.
func FuzzFederationSplit(f *testing.F) {
	for _, s := range parserPanics {
		f.Add(s)
		f.Add(s + "\n")
	}
	f.Add(`# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{instance="a:1",job="vllm",model_name="m"} 3 1000
vllm:num_requests_running{instance="b \"x\", y:2",job="vllm",model_name="m\\n"} 4
vllm:cache_config_info{block_size="16",instance="a:1",job="vllm"} 1 1000
x{} 1
y 2
vllm:num_requests_waiting{instance="a:1",job="vllm",model_name="m",namespace="llm",pod="p-0"} NaN 2000
`)
	f.Fuzz(func(t *testing.T, in string) {
		fed := newFederation([]string{"vllm:num_requests_running"}, nil)
		fed.now = 5000
		ferr := fed.read(strings.NewReader(in), 1, false)
		want, ok := textSamples([]byte(in), true)
		if !ok || strings.Contains(in, "\x00") || rawNewlineInQuotes(in) || quotedName(in) || blankAtEquals(in) {
			// Refused; or read up to a NUL, which the parser takes for
			// the end (at a line's start, or after its leading blanks);
			// or a label value with a raw
			// newline, which the text format forbids and no Prometheus
			// writes (it escapes it); or Prometheus 3's quoted metric name
			// ({"name", ...}), which the splitter does not read yet; or a
			// blank beside a label's "=" (`{a= "x"}`), which the parser
			// skips and no server writes. The splitter refuses all of
			// these, naming the line.
			return
		}
		if ferr != nil {
			t.Fatalf("Prometheus' parser reads it, the splitter says %v", ferr)
		}
		var got []string
		for _, tg := range fed.byKey {
			if keyOf(tg.m) == keyOf(nil) {
				continue // no target label: nothing to compare it with
			}
			ss, ok := textSamples(fed.text(nil, tg), false)
			if !ok {
				t.Fatalf("a target's rebuilt text does not parse:\n%s", fed.text(nil, tg))
			}
			for _, s := range ss {
				// The rebuilt text has no target labels: its key is tg's.
				_, rest, _ := strings.Cut(s, "|")
				got = append(got, keyOf(tg.m)+"|"+rest)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		// Nothing filed that the parser did not read, under that target.
		left := slices.Clone(want)
		for _, g := range got {
			i := slices.Index(left, g)
			if i < 0 {
				t.Fatalf("the splitter filed %q, which Prometheus' parser did not read:\n%q", g, want)
			}
			left = slices.Delete(left, i, i+1)
		}
		// And nothing lost, where every line is in the form servers write
		// (the parser also takes a leading space, labels without commas).
		if len(left) > 0 && canonical(in) {
			t.Fatalf("the splitter lost %q", left)
		}
	})
}

// FuzzNextLabel: the split's label walk (nextLabel) reads any label block
// as eachLabel does: the same names and raw values in order, each label's
// whole text its name, `="`, its value and `"`, the same end, the same
// error.
func FuzzNextLabel(f *testing.F) {
	for _, s := range []string{`}`, `a="x"}`, `instance="replica-0001:8000",job="vllm",le="0.5",model_name="m"} 3 1000`,
		`a="\"q\\",b="x\n"}`, `a="x\`, `a="x\"`, `a="x`, `a=x}`, `="v"}`, `, a="1" ,b="2",}`, `a="é"}`, `a`, ``, `a="\\"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		lb := []byte(in)
		type label struct{ name, raw string }
		var want []label
		wantEnd, wantErr := eachLabel(lb, func(name, raw []byte) { want = append(want, label{string(name), string(raw)}) })
		var got []label
		gotEnd := 0
		var gotErr error
		for i := 0; ; {
			name, raw, whole, next, err := nextLabel(lb, i)
			if err != nil {
				gotErr = err
				break
			}
			if name == nil {
				gotEnd = next
				break
			}
			if w := string(name) + `="` + string(raw) + `"`; string(whole) != w {
				t.Fatalf("whole %q, want %q", whole, w)
			}
			got = append(got, label{string(name), string(raw)})
			i = next
		}
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%q: nextLabel says %v, eachLabel %v", in, gotErr, wantErr)
		}
		if wantErr != nil {
			return // eachLabel's labels before the error are not used
		}
		if gotEnd != wantEnd || !slices.Equal(got, want) {
			t.Fatalf("%q: nextLabel reads %q to %d, eachLabel %q to %d", in, got, gotEnd, want, wantEnd)
		}
	})
}

// FuzzSplitReuse: the split reads an answer the same whether each line's
// labels are walked whole or from where the last line's differ (walk):
// the same targets, identities, records, stamps and series, or the same
// error. The seeds are answers as servers write them, buckets one after
// another, and lines alike up to a point inside a label.
func FuzzSplitReuse(f *testing.F) {
	f.Add(fleetAnswer(3, 4))
	f.Add(`a{instance="x:1",job="j",le="1"} 1
a{instance="x:1",job="j",le="10"} 2
a{instance="x:1",job="j",le="10",le="2"} 3
a{instance="x:1",job="j",job="k"} 4
a{instance="x:1",job="j",job="k2"} 5
a{instance="x:1",job="j",le="1\"} 6
a{instance="x:1",job="j",le="1\""} 7
ab{instance="x:1",job="j"} 8
a{instance="x:12",job="j"} 9
a{instance="x:1",job="j",le="1",namespace="n"} 10
a{instance="x:1",job="j",le="1",namespace="m"} 11
a{cluster="c",instance="x:1",job="j",le="1"} 12
a{instance="x:1",job="j",le="1" } 13
a{instance="x:1",job="j",le="1"}14
`)
	f.Add(k8sAnswer(3, 4, false))
	f.Add(k8sAnswer(3, 4, true))
	f.Fuzz(func(t *testing.T, in string) {
		var got [2]string
		for i, noReuse := range []bool{false, true} {
			fed := newFederation([]string{"vllm:num_requests_running"}, nil)
			fed.now, fed.noReuse = 5000, noReuse
			var b strings.Builder
			// Twice, as two refreshes: the second reads by the shapes
			// and the targets' order the first left.
			for gen := range uint64(2) {
				err := fed.read(strings.NewReader(in), gen+1, false)
				fmt.Fprintf(&b, "err %v\nseries %q\n", err, fed.series)
				keys := slices.Sorted(maps.Keys(fed.byKey))
				for _, k := range keys {
					tg := fed.byKey[k]
					fmt.Fprintf(&b, "%q %v gen %d stamp %d next %d recs %x\n", k, tg.m, tg.gen, tg.stamp, tg.next, tg.recs)
				}
			}
			got[i] = b.String()
		}
		if got[0] != got[1] {
			t.Fatalf("walked from the last line's labels, or read by shape:\n%s\nwalked whole:\n%s", got[0], got[1])
		}
	})
}

// fleetAnswer is a /federate answer as Prometheus writes one: families in
// name order, each family's series in label order, every replica's
// buckets one after another.
func fleetAnswer(replicas, buckets int) string {
	var b strings.Builder
	for _, fam := range []string{"vllm:e2e_request_latency_seconds_bucket", "vllm:num_requests_running", "vllm:prompt_tokens_total"} {
		fmt.Fprintf(&b, "# TYPE %s untyped\n", fam)
		for r := range replicas {
			n := 1
			if strings.HasSuffix(fam, "_bucket") {
				n = buckets
			}
			for le := range n {
				extra := ""
				if n > 1 {
					extra = fmt.Sprintf(`,le="%d"`, le)
				}
				fmt.Fprintf(&b, `%s{engine="0",instance="replica-%04d:8000",job="vllm"%s,model_name="m"} %d.5 %d`+"\n", fam, r, extra, r*10+le, 4000+r)
			}
		}
	}
	return b.String()
}

// k8sAnswer is a /federate answer with the labels a Kubernetes scrape
// adds, which fall on both sides of vLLM's own (engine between endpoint
// and instance). With odd, one replica's lines alternate between two
// container labels, and every third line of each replica lacks its pod
// label, the last of the target's (another target's line, alike but
// for a label left out).
func k8sAnswer(replicas, buckets int, odd bool) string {
	var b strings.Builder
	for _, fam := range []string{"vllm:e2e_request_latency_seconds_bucket", "vllm:num_requests_running"} {
		for r := range replicas {
			n := 1
			if strings.HasSuffix(fam, "_bucket") {
				n = buckets
			}
			for le := range n {
				extra := ""
				if n > 1 {
					extra = fmt.Sprintf(`,le="%d"`, le)
				}
				ctr, tail := "vllm", fmt.Sprintf(`,pod="vllm-%d",service="vllm"`, r)
				if odd {
					tail = fmt.Sprintf(`,pod="vllm-%d"`, r)
					if r == 1 {
						ctr = fmt.Sprintf("vllm-%d", le%2)
					}
					if le%3 == 0 {
						tail = ""
					}
				}
				fmt.Fprintf(&b, `%s{container=%q,endpoint="http",engine="0",instance="10.0.0.%d:8000",job="vllm"%s,model_name="m",namespace="llm"%s} %d 4000`+"\n",
					fam, ctr, r, extra, tail, r*10+le)
			}
		}
	}
	return b.String()
}

// canonLine is a sample line as Prometheus and VictoriaMetrics write one.
var canonLine = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\\n])*"(,[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\\n])*")*,?)?\} [^ ]+( [^ ]+)?$`)

// canonical reports whether every sample line of in has the servers' form.
func canonical(in string) bool {
	for _, l := range strings.Split(in, "\n") {
		if l != "" && l[0] != '#' && !canonLine.MatchString(l) {
			return false
		}
	}
	return true
}

// FuzzReadRange: a range answer that both the streaming reader and
// encoding/json accept decodes to the same series (keys matched exactly,
// as Prometheus writes them) and the same value at every step.
func FuzzReadRange(f *testing.F) {
	start := time.Unix(1_700_000_000, 0)
	r := v1.Range{Start: start, End: start.Add(4 * 15 * time.Second), Step: 15 * time.Second}
	f.Add(`{"status":"success","data":{"resultType":"matrix","result":[` +
		`{"metric":{"__name__":"vllm:num_requests_running","instance":"a:1","job":"vllm","model_name":"m\"x\\y\nz\u00e9"},` +
		`"values":[[1700000000,"1"],[1700000015.000,"2.5"],[1700000030.5,"9"],[1700000045,"NaN"]]}]}}`)
	f.Add(`{"status":"error","errorType":"bad_data","error":"x"}`)
	f.Add(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[0,"1\n x 2"]]}]}}`)
	for _, s := range parserPanics {
		f.Add(`{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1700000015,"+Inf"]],"metric":{"__name__":` + strconv.Quote(s) + `}}]}}`)
	}
	f.Fuzz(func(t *testing.T, body string) {
		p, err := readRange(strings.NewReader(body), r)
		if err != nil {
			return
		}
		var doc any
		if jerr := json.Unmarshal([]byte(body), &doc); jerr != nil {
			// json-iterator is lenient where encoding/json is strict (a raw
			// control byte in a string, found here): no Prometheus writes
			// such an answer, and what is read from one still goes through
			// the sanitizer. The property is on what both accept.
			return
		}
		if dupKeys(body) {
			return // which of two equal keys counts is the decoder's choice
		}
		top, _ := doc.(map[string]any)
		data, _ := top["data"].(map[string]any)
		result, _ := data["result"].([]any)
		if top["status"] != "success" || data["resultType"] != "matrix" || len(p.series) != len(result) {
			t.Fatalf("status %v, type %v, %d series; read %d", top["status"], data["resultType"], len(result), len(p.series))
		}
		var scratch []labelPair
		for i, one := range result {
			ss, _ := one.(map[string]any)
			m := model.Metric{}
			labelsOf, _ := ss["metric"].(map[string]any)
			for k, v := range labelsOf {
				m[model.LabelName(k)] = model.LabelValue(v.(string))
			}
			if p.series[i].key != keyOf(m) || string(p.lineOf(i)) != string(appendSeries(nil, m, &scratch)) {
				t.Fatalf("series %d: %q %q, want %v", i, p.series[i].key, p.lineOf(i), m)
			}
			pts, _ := ss["values"].([]any)
			for k := 0; k < p.steps; k++ {
				ms := start.Add(time.Duration(k) * r.Step).UnixMilli()
				var want *string
				for _, pt := range pts {
					pair := pt.([]any)
					if int64(math.Round(pair[0].(float64)*1000)) == ms {
						v := pair[1].(string)
						want = &v
						break
					}
				}
				v := p.value(i, k)
				if (want == nil) != (v == nil) {
					t.Fatalf("series %d step %d: %q, want %v", i, k, v, want)
				}
				if want != nil {
					a, err1 := strconv.ParseFloat(string(v), 64)
					b, err2 := strconv.ParseFloat(*want, 64)
					if err1 != nil || err2 != nil || !model.SampleValue(a).Equal(model.SampleValue(b)) {
						t.Fatalf("series %d step %d: %q, want %q", i, k, v, *want)
					}
				}
			}
		}
	})
}

// dupKeys reports whether any object in the JSON document body names a
// key twice.
func dupKeys(body string) bool {
	dec := json.NewDecoder(strings.NewReader(body))
	type frame struct {
		obj  bool
		key  bool // the next token is a key
		seen map[string]bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.key {
			if k, ok := tok.(string); ok {
				if top.seen[k] {
					return true
				}
				top.seen[k] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			if top != nil && top.obj {
				top.key = true
			}
			stack = append(stack, &frame{obj: true, key: true, seen: map[string]bool{}})
		case json.Delim('['):
			if top != nil && top.obj {
				top.key = true
			}
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			if top != nil && top.obj {
				top.key = true
			}
		}
	}
}

// rawNewlineInQuotes says whether a line ends inside a quoted string: a
// raw newline in a label value.
func rawNewlineInQuotes(in string) bool {
	quoted := false
	for i := 0; i < len(in); i++ {
		switch c := in[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case c == '\n':
			if quoted {
				return true
			}
		}
	}
	return false
}

// quotedName says whether a sample line opens with '{': the quoted-name
// form of UTF-8 metric names.
// blankAtEquals reports a blank (space or tab) before or after a label's
// "=" inside a label block.
func blankAtEquals(in string) bool {
	for _, line := range strings.Split(in, "\n") {
		_, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		for i := 0; i < len(rest); i++ {
			if rest[i] == '=' && (i > 0 && (rest[i-1] == ' ' || rest[i-1] == '\t') || i+1 < len(rest) && (rest[i+1] == ' ' || rest[i+1] == '\t')) {
				return true
			}
		}
	}
	return false
}

func quotedName(in string) bool {
	for _, line := range strings.Split(in, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " \t"), "{") {
			return true
		}
	}
	return false
}
