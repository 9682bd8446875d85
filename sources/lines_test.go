package sources

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// The incremental path must give the snapshot (or the error) of a full parse,
// bit for bit, over any sequence of bodies. The reference is a Normalizer
// fed the same sequence with the incremental path off, so both carry the
// same series cache and sub-series from scrape to scrape.

const (
	textCT0 = "text/plain; version=0.0.4"
	omCT    = "application/openmetrics-text; version=1.0.0; charset=utf-8"
)

// CheckIncremental feeds bodies to an incremental and a full Normalizer and
// fails at the first difference; it returns how many bodies the incremental
// one read incrementally. (Exported to the sim-driven test in sources_test.)
func CheckIncremental(t testing.TB, ct string, bodies [][]byte) int {
	t.Helper()
	inc, full := NewNormalizer(), NewNormalizer()
	full.full = true
	for _, n := range []*Normalizer{inc, full} {
		n.MaxSamples, n.MaxSubs = 5000, 40
	}
	for i, b := range bodies {
		// Room after the body, as a read body has: the text parser parses
		// a copy of one at full capacity, whose lines are not tracked.
		b = append(make([]byte, 0, len(b)+1), b...)
		s1, e1 := inc.Normalize(b, ct)
		s2, e2 := full.Normalize(b, ct)
		if fmt.Sprint(e1) != fmt.Sprint(e2) {
			t.Fatalf("body %d: incremental error %v, full %v\n%s", i, e1, e2, b)
		}
		if d := diffValues(reflect.ValueOf(s1), reflect.ValueOf(s2), "snapshot"); d != "" {
			t.Fatalf("body %d: incremental and full parse differ at %s\nprevious body:\n%s\nbody:\n%s", i, d, prevOf(bodies, i), b)
		}
		// Both keep what the previous body's lines resolved to (a full
		// parse takes a line's class again where its series is the same):
		// a target's first body, with nothing kept, is the reference.
		fresh := NewNormalizer()
		fresh.MaxSamples, fresh.MaxSubs = 5000, 40
		s3, e3 := fresh.Normalize(b, ct)
		if fmt.Sprint(e3) != fmt.Sprint(e2) {
			t.Fatalf("body %d: full parse error %v, as a first body %v\n%s", i, e2, e3, b)
		}
		if d := diffValues(reflect.ValueOf(s2), reflect.ValueOf(s3), "snapshot"); d != "" {
			t.Fatalf("body %d: the full parse and a first body's differ at %s\nprevious body:\n%s\nbody:\n%s", i, d, prevOf(bodies, i), b)
		}
	}
	return int(inc.incr)
}

func prevOf(bodies [][]byte, i int) []byte {
	if i == 0 {
		return nil
	}
	return bodies[i-1]
}

// diffValues compares two values deeply, floats by their bits (NaN equals
// NaN, 0 is not -0); it describes the first difference, or returns "".
func diffValues(a, b reflect.Value, path string) string {
	if a.IsValid() != b.IsValid() {
		return path + ": one is missing"
	}
	if !a.IsValid() {
		return ""
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		if math.Float64bits(a.Float()) != math.Float64bits(b.Float()) {
			return fmt.Sprintf("%s: %v != %v", path, a.Float(), b.Float())
		}
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() != b.IsNil() {
			return path + ": nil and not nil"
		}
		if !a.IsNil() {
			return diffValues(a.Elem(), b.Elem(), path)
		}
	case reflect.Slice, reflect.Array:
		if a.Kind() == reflect.Slice && a.IsNil() != b.IsNil() {
			return path + ": nil and empty slice"
		}
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: length %d != %d", path, a.Len(), b.Len())
		}
		for i := 0; i < a.Len(); i++ {
			if d := diffValues(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if d := diffValues(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
	case reflect.Map:
		if a.Len() != b.Len() {
			return path + ": map sizes differ"
		}
		for _, k := range a.MapKeys() {
			if d := diffValues(a.MapIndex(k), b.MapIndex(k), fmt.Sprintf("%s[%v]", path, k)); d != "" {
				return d
			}
		}
	default:
		if a.Interface() != b.Interface() {
			return fmt.Sprintf("%s: %v != %v", path, a.Interface(), b.Interface())
		}
	}
	return ""
}

// mutate returns body with random edits of the kinds a target makes from
// one scrape to the next (values move) and the kinds that must take the
// full parse (lines added, removed, reordered; HELP/TYPE, labels and
// Content-Type-sensitive text changed; lines broken by a quoted newline or
// a NUL; the final newline gone).
func mutate(r *rand.Rand, body []byte) []byte {
	lines := bytes.Split(body, []byte("\n"))
	pick := func() int { return r.IntN(len(lines)) }
	values := []string{"0", "1", "7.0", "12345678", "-1", "1e308", "NaN", "+Inf", "-Inf", "0.5", "x", "1 1700000000000", "2 # {a=\"b\"} 1",
		// Spellings at the edge of what a changed line's value is read
		// without the parser for (readChanged): the parser's alone.
		"0x1p3", "1_000", "Infinity", "nan", "1.5e-3", "-0", ".5", "5.", "+5", " 9", "1\r", "1e", "--1", "1e999"}
	edits := 1 + r.IntN(4)
	for e := 0; e < edits; e++ {
		if len(lines) == 0 {
			lines = [][]byte{{}}
		}
		k := pick()
		l := lines[k]
		switch op := r.IntN(20); {
		case op < 10: // a value moves (most of what happens)
			if i := bytes.LastIndexByte(l, ' '); i > 0 && l[0] != '#' {
				v := values[r.IntN(len(values))]
				if r.IntN(2) == 0 {
					v = fmt.Sprint(r.IntN(1000))
				}
				lines[k] = append(bytes.Clone(l[:i+1]), v...)
			}
		case op == 10: // a line appears
			lines = append(lines[:k], append([][]byte{bytes.Clone(lines[pick()])}, lines[k:]...)...)
		case op == 11: // a line goes
			if len(lines) > 1 {
				lines = append(lines[:k], lines[k+1:]...)
			}
		case op == 12: // two lines swap
			j := pick()
			lines[k], lines[j] = lines[j], lines[k]
		case op == 13: // a label value changes: a new series
			if i := bytes.IndexByte(l, '"'); i >= 0 {
				lines[k] = append(append(bytes.Clone(l[:i+1]), 'z'), l[i+1:]...)
			}
		case op == 14: // a line becomes a comment, a blank or garbage
			lines[k] = [][]byte{[]byte("# a comment"), {}, []byte("{"), []byte("# HELP vllm:num_requests_running " + helpV1Running),
				[]byte("# TYPE vllm:num_requests_running gauge"), []byte("# EOF")}[r.IntN(6)]
		case op == 15: // a quoted newline or a NUL inside a line
			if i := bytes.IndexByte(l, '"'); i >= 0 {
				lines[k] = append(append(bytes.Clone(l[:i+1]), [][]byte{{'\n'}, {0}, []byte("\"} 1\nx{a=\"")}[r.IntN(3)]...), l[i+1:]...)
			}
		case op == 16: // a sample appears where there was none, or a known one is repeated
			lines[k] = bytes.Clone(lines[pick()])
		case op == 18: // text right after the series: a longer name, more labels
			if i := bytes.LastIndexByte(l, ' '); i > 0 {
				if j := bytes.LastIndexByte(l[:i], '}'); j > 0 {
					i = j + 1
				}
				ins := []string{"_total", "a", "{", " {a=\"b\"}", "}", "\t", ":", "0"}[r.IntN(8)]
				lines[k] = append(append(bytes.Clone(l[:i]), ins...), l[i:]...)
			}
		case op == 17: // the trailing newline goes or comes
			if len(lines[len(lines)-1]) == 0 {
				lines = lines[:len(lines)-1]
			} else {
				lines = append(lines, nil)
			}
		default: // nothing: the same body again
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// sequence is body followed by n mutations of it, each of the one before.
func sequence(seed uint64, body []byte, n int) [][]byte {
	r := rand.New(rand.NewPCG(seed, 1))
	out := [][]byte{body}
	for i := 0; i < n; i++ {
		next := mutate(r, out[len(out)-1])
		if r.IntN(4) == 0 {
			next = out[len(out)-1] // an endpoint that did not move
		}
		out = append(out, next)
	}
	return out
}

func TestIncrementalMatchesFullOnCaptures(t *testing.T) {
	reused := 0
	for _, name := range dumpNames(t) {
		body := published(t, name)
		for seed := uint64(0); seed < 20; seed++ {
			reused += CheckIncremental(t, textCT0, sequence(seed, body, 12))
		}
	}
	for i, body := range hostileSeeds() {
		for seed := uint64(0); seed < 20; seed++ {
			reused += CheckIncremental(t, textCT0, sequence(seed+uint64(i)<<8, []byte(body), 12))
		}
	}
	if reused == 0 {
		t.Fatal("no body was read incrementally: the comparison says nothing")
	}
}

func TestIncrementalOpenMetrics(t *testing.T) {
	body := []byte("# HELP vllm:num_requests_running Number of requests in model execution batches.\n" +
		"# TYPE vllm:num_requests_running gauge\n" +
		"vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n" +
		"# TYPE vllm:prompt_tokens counter\n" +
		"vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 10.0\n" +
		"vllm:prompt_tokens_created{engine=\"0\",model_name=\"m\"} 1.7e9\n" +
		"# TYPE vllm:time_to_first_token_seconds histogram\n" +
		"vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\",model_name=\"m\"} 1.0 # {trace_id=\"a\"} 0.05 1.7e9\n" +
		"vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 2.0\n" +
		"vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 2.0\n" +
		"vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 0.3\n" +
		"# EOF\n")
	reused := 0
	for seed := uint64(0); seed < 200; seed++ {
		reused += CheckIncremental(t, omCT, sequence(seed, body, 12))
	}
	if reused == 0 {
		t.Fatal("no body was read incrementally")
	}
}

// A changed value on an unchanged structure is read without parsing the
// other lines, and gives the new value.
func TestIncrementalReadsOnlyChangedLines(t *testing.T) {
	body := published(t, "armandossrecife-vllm-server-api-chat__v0.10.1-ngc25.09_full.txt")
	n := NewNormalizer()
	if _, err := n.Normalize(body, textCT0); err != nil {
		t.Fatal(err)
	}
	n.Changes(body) // as a recording does: n keeps the changed lines from now on
	next := bytes.Replace(body, []byte("vllm:num_requests_waiting{engine=\"0\",model_name=\"Qwen/Qwen3-4B-Instruct-2507-FP8\"} 0.0"),
		[]byte("vllm:num_requests_waiting{engine=\"0\",model_name=\"Qwen/Qwen3-4B-Instruct-2507-FP8\"} 7.0"), 1)
	if bytes.Equal(next, body) {
		t.Fatal("the capture has no such line")
	}
	s, err := n.Normalize(next, textCT0)
	if err != nil {
		t.Fatal(err)
	}
	if d := n.Changes(next); n.incr != 1 || d == nil || len(d.Index) != 1 {
		t.Fatalf("read incrementally %d times, changes %+v; want 1 and one changed line", n.incr, d)
	}
	if got := s.Subs[0].Gauges[GWaiting]; got != 7 {
		t.Fatalf("waiting = %v, want 7", got)
	}
}

// FuzzIncremental: for any body and any sequence of edits, the incremental
// path gives what a full parse gives.
func FuzzIncremental(f *testing.F) {
	f.Add([]byte("vllm:num_requests_running{model_name=\"m\"} 1\nvllm:num_requests_waiting{model_name=\"m\"} 2\n"), textCT0, uint64(1))
	for i, body := range hostileSeeds() {
		f.Add([]byte(body), textCT0, uint64(i))
	}
	f.Add([]byte("# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total{model_name=\"m\"} 1\n# EOF\n"), omCT, uint64(3))
	f.Fuzz(func(t *testing.T, body []byte, ct string, seed uint64) {
		if len(body) > 1<<16 {
			return
		}
		CheckIncremental(t, ct, sequence(seed, body, 6))
	})
}

// NewFullNormalizer is a Normalizer that parses every body in full, the
// reference for the incremental path (exported to sources_test).
func NewFullNormalizer() *Normalizer {
	n := NewNormalizer()
	n.full = true
	return n
}

// A target nobody records keeps no changed-line lists between scrapes; one
// whose caller asked for its changes once keeps them for Changes.
func TestChangedListsKeptOnlyWhenRecorded(t *testing.T) {
	body := published(t, "armandossrecife-vllm-server-api-chat__v0.10.1-ngc25.09_full.txt")
	next := bytes.Replace(body, []byte("} 0.0\n"), []byte("} 1.0\n"), 3)
	for _, recorded := range []bool{false, true} {
		n := NewNormalizer()
		for i, b := range [][]byte{body, next, body} {
			if _, err := n.Normalize(b, textCT0); err != nil {
				t.Fatal(err)
			}
			if recorded {
				d := n.Changes(b)
				if i > 0 && (d == nil || len(d.Index) != 3) {
					t.Fatalf("recorded, body %d: changes %+v, want 3 changed lines", i, d)
				}
				continue
			}
			if n.fp.lists != nil || cap(n.fp.changed) != 0 || cap(n.fp.changedAt) != 0 {
				t.Fatalf("not recorded, body %d: %d changed lines kept between scrapes", i, cap(n.fp.changed))
			}
		}
	}
}

// A series repeated in a body is ignored after its first line on every
// read, not only the first: the second full parse of the same body takes
// each line's class from the first, and still finds the repeat.
func TestRepeatedSeriesOnEveryRead(t *testing.T) {
	body := []byte("# TYPE vllm:num_requests_running gauge\n" + // not the plain form: the text parser reads it
		"vllm:num_requests_running{model_name=\"m\"} 3\n" +
		"vllm:num_requests_waiting{model_name=\"m\"} 1\n" +
		"vllm:num_requests_running{model_name=\"m\"} 9\n")
	for _, ct := range []string{textCT0, omCT} {
		n := NewFullNormalizer()
		// Room for the text parser's final newline, as a read body has:
		// at full capacity it parses a copy, and no line is tracked.
		b := append(make([]byte, 0, len(body)+16), body...)
		if ct == omCT {
			b = append(b, "# EOF\n"...)
		}
		for read := 1; read <= 3; read++ {
			s, err := n.Normalize(b, ct)
			if err != nil {
				t.Fatal(err)
			}
			if g := s.Subs[0].Gauges[GRunning]; g != 3 || !slices.Contains(s.Warnings, "1 duplicate series ignored (first one kept)") {
				t.Errorf("%s, read %d: running %v, warnings %q", ct, read, g, s.Warnings)
			}
		}
	}
}
