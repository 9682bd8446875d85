package sources

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The plain form is read without the lexer (plain.go): it must give the
// snapshot (or the error) the text parser gives, bit for bit, over any
// sequence of bodies, the incremental path in between. The reference is a
// Normalizer fed the same sequence with the plain reader off.

// checkPlain feeds bodies to both and fails at the first difference; it
// returns how many bodies the plain reader read.
func checkPlain(t testing.TB, ct string, bodies [][]byte) int {
	t.Helper()
	pl, ref := NewNormalizer(), NewNormalizer()
	ref.noPlain = true
	for _, n := range []*Normalizer{pl, ref} {
		n.MaxSamples, n.MaxSubs = 5000, 40
		// Classes of their own: a series the parser read is trusted by
		// the plain reader, so the process's classes, kept from an earlier
		// run of a case (-count=2), would read it plain.
		n.Classes = NewSeriesClasses(1 << 12)
	}
	for i, b := range bodies {
		s1, e1 := pl.Normalize(b, ct)
		s2, e2 := ref.Normalize(b, ct)
		if fmt.Sprint(e1) != fmt.Sprint(e2) {
			t.Fatalf("body %d: plain reader's error %v, the parser's %v\n%q", i, e1, e2, b)
		}
		if d := diffValues(reflect.ValueOf(s1), reflect.ValueOf(s2), "snapshot"); d != "" {
			t.Fatalf("body %d: plain reader and parser differ at %s\n%s", i, d, b)
		}
	}
	return int(pl.plain)
}

// plainOf is a capture as the Prometheus source rebuilds it from /federate:
// the running gauge's HELP, then the samples, no other comment.
func plainOf(body []byte) []byte {
	var out []byte
	for _, l := range bytes.SplitAfter(body, []byte("\n")) {
		switch {
		case bytes.HasPrefix(l, []byte("# HELP vllm:num_requests_running ")):
		case len(bytes.TrimSpace(l)) == 0, l[0] == '#':
			continue
		}
		out = append(out, l...)
	}
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n') // a capture saved without its last newline; the source ends every line
	}
	return out
}

// Every capture in its plain form, then changed as a busy server changes
// it, reads as the parser reads it, and by the plain reader.
func TestPlainMatchesParserOnCaptures(t *testing.T) {
	for _, name := range dumpNames(t) {
		body := plainOf(published(t, name))
		read := 0
		for seed := uint64(0); seed < 8; seed++ {
			read += checkPlain(t, textCT0, sequence(seed, body, 8))
		}
		if read == 0 {
			t.Errorf("%s: the plain reader read none of its bodies", name)
		}
	}
}

// What the plain form is not goes to the parser, whole; what it is, the
// plain reader reads. Either way the result is the parser's.
func TestPlainForm(t *testing.T) {
	const run = `vllm:num_requests_running{model_name="m"} 3` + "\n"
	cases := []struct {
		name, body string
		plain      bool
	}{
		{"samples", run + `vllm:num_requests_waiting{model_name="m",engine="0"} 1` + "\n", true},
		{"help of the running gauge", "# HELP vllm:num_requests_running Number of requests in model execution batches.\n" + run, true},
		{"another family's help", "# HELP vllm:x anything at all\n" + run, true},
		{"no labels", "vllm:num_requests_running 2\n", true},
		{"escaped quote and backslash", `vllm:num_requests_running{model_name="a\"b\\c"} 1` + "\n", true},
		{"unicode label value", `vllm:num_requests_running{model_name="modèle"} 1` + "\n", true},
		{"NaN and infinities", "vllm:num_requests_running{model_name=\"m\"} NaN\nvllm:kv_cache_usage_perc{model_name=\"m\"} +Inf\nvllm:prompt_tokens_total{model_name=\"m\"} -Inf\n", true},
		{"a duplicate line", run + run, true},
		{"type line", "# TYPE vllm:num_requests_running gauge\n" + run, false},
		{"comment", "# just a comment\n" + run, false},
		{"help with an escape", "# HELP vllm:num_requests_running a\\nb\n" + run, false},
		{"timestamp", `vllm:num_requests_running{model_name="m"} 3 1700000000000` + "\n", false},
		{"blank line", run + "\n" + run, false},
		{"unended last line", strings.TrimSuffix(run, "\n"), false},
		{"trailing comma", `vllm:num_requests_running{model_name="m",} 3` + "\n", false},
		{"empty braces", "vllm:num_requests_running{} 3\n", true},
		{"quoted name", `{"vllm:num_requests_running",model_name="m"} 3` + "\n", false},
		{"two spaces", `vllm:num_requests_running{model_name="m"}  3` + "\n", false},
		{"tab", "vllm:num_requests_running{model_name=\"m\"}\t3\n", false},
		{"hex float", `vllm:num_requests_running{model_name="m"} 0x1p3` + "\n", false},
		{"underscore", `vllm:num_requests_running{model_name="m"} 1_0` + "\n", false},
		{"not a number", `vllm:num_requests_running{model_name="m"} three` + "\n", false},
		{"invalid UTF-8", "vllm:num_requests_running{model_name=\"\xff\"} 1\n", false},
		{"newline in a label value", "vllm:num_requests_running{model_name=\"a\nb\"} 1\n", false},
		{"unterminated labels", `vllm:num_requests_running{model_name="x" 1` + "\n", false},
		{"digit first", `9vllm{model_name="m"} 1` + "\n", false},
		{"carriage return", "vllm:num_requests_running{model_name=\"m\"} 3\r\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(c.body)
			if got := checkPlain(t, textCT0, [][]byte{body, body}) > 0; got != c.plain {
				t.Errorf("read by the plain reader: %v, want %v", got, c.plain)
			}
			// Not in the plain form may still be read as parts the
			// second time: a series text the parser read is trusted (its
			// class is shared), as the plain reader trusts it.
			if got := checkSplit(t, [][]byte{body, body}) > 0; c.plain && !got {
				t.Error("not read as parts")
			}
		})
	}
	// The plain reader serves only what the text parser would read.
	if n := checkPlain(t, omCT, [][]byte{[]byte(run + "# EOF\n")}); n != 0 {
		t.Error("an OpenMetrics body was read as plain text")
	}
}

// FuzzPlain: whatever the body, the plain reader and the parser agree.
func FuzzPlain(f *testing.F) {
	f.Add([]byte("# HELP vllm:num_requests_running Number of requests in model execution batches.\nvllm:num_requests_running{model_name=\"m\"} 1\n"), uint64(1))
	f.Add([]byte("vllm:num_requests_running{model_name=\"a\\\"b\"} NaN\nvllm:num_requests_running 2\n"), uint64(2))
	for i, body := range hostileSeeds() {
		f.Add([]byte(body), uint64(i))
	}
	f.Fuzz(func(t *testing.T, body []byte, seed uint64) {
		if len(body) > 1<<16 {
			return
		}
		checkPlain(t, textCT0, sequence(seed, body, 4))
	})
}

// A replica's first read in a refresh, as the Prometheus source does it:
// a new normalizer, the worker's series classes already warm; the plain
// reader against the parser.
//
//	go test -run '^$' -bench NormalizePlainFirst -count 3 ./sources
func BenchmarkNormalizePlainFirst(b *testing.B) {
	raw, err := os.ReadFile("../testdata/dumps/armandossrecife-vllm-server-api-chat__v0.10.1-ngc25.09_full.txt")
	if err != nil {
		b.Fatal(err)
	}
	body := plainOf(raw)
	for _, c := range []struct {
		name    string
		noPlain bool
	}{{"plain", false}, {"parser", true}} {
		b.Run(c.name, func(b *testing.B) {
			cs := NewSeriesClasses(1 << 15)
			b.ReportAllocs()
			for b.Loop() {
				n := NewNormalizer()
				n.Classes, n.noPlain = cs, c.noPlain
				if _, err := n.Normalize(body, textCT0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A plain body handed over as its parts (NormalizePlain, what the
// Prometheus source does with a /federate answer's split lines) must give
// what the text parser gives for the text they make, over any sequence of
// bodies; one it cannot take (handled false) is then read as text, as
// the source does. checkSplit returns how many bodies it took as parts.
func checkSplit(t testing.TB, bodies [][]byte) int {
	t.Helper()
	sp, ref := NewNormalizer(), NewNormalizer()
	ref.noPlain = true
	for _, n := range []*Normalizer{sp, ref} {
		n.MaxSamples, n.MaxSubs = 5000, 40
		n.Classes = NewSeriesClasses(1 << 12) // as checkPlain
	}
	took := 0
	for i, b := range bodies {
		var s1 *Snapshot
		var e1 error
		handled := false
		if header, samples, ok := splitBody(sp, b); ok {
			s1, handled, e1 = sp.NormalizePlain(header, samples)
		}
		if handled {
			took++
		} else {
			s1, e1 = sp.Normalize(b, textCT0)
		}
		s2, e2 := ref.Normalize(b, textCT0)
		if fmt.Sprint(e1) != fmt.Sprint(e2) {
			t.Fatalf("body %d: read as parts (%v): error %v, the parser's %v\n%q", i, handled, e1, e2, b)
		}
		if d := diffValues(reflect.ValueOf(s1), reflect.ValueOf(s2), "snapshot"); d != "" {
			t.Fatalf("body %d: read as parts (%v) and by the parser differ at %s\n%s", i, handled, d, b)
		}
	}
	return took
}

// splitBody cuts a body as the Prometheus source has it: the comment
// lines before the first sample, then each line's series (resolved) and
// value, cut at its last space. ok is false for what the source never
// has: a comment after a sample, a blank or unended line, a line without
// a space.
func splitBody(n *Normalizer, b []byte) (header []byte, samples []PlainSample, ok bool) {
	for off := 0; off < len(b); {
		nl := bytes.IndexByte(b[off:], '\n')
		if nl <= 0 {
			return nil, nil, false
		}
		line := b[off : off+nl]
		off += nl + 1
		if line[0] == '#' {
			if len(samples) > 0 {
				return nil, nil, false
			}
			header = append(header, b[off-nl-1:off]...)
			continue
		}
		sp := bytes.LastIndexByte(line, ' ')
		if sp < 0 {
			return nil, nil, false
		}
		ref, _ := n.ResolvePlain(line[:sp]) // unresolved: a zero ref, which NormalizePlain refuses
		samples = append(samples, PlainSample{Ref: ref, Value: line[sp+1:]})
	}
	return header, samples, true
}

// Every capture in its plain form, and changed as a busy server changes
// it, reads as parts as the parser reads its text.
func TestSplitMatchesParserOnCaptures(t *testing.T) {
	for _, name := range dumpNames(t) {
		body := headFirst(plainOf(published(t, name)))
		took := 0
		for seed := uint64(0); seed < 4; seed++ {
			took += checkSplit(t, sequence(seed, body, 6))
		}
		if took == 0 {
			t.Errorf("%s: none of its bodies was read as parts", name)
		}
	}
}

// headFirst moves a body's comment lines before its samples, where the
// Prometheus source writes its one HELP line.
func headFirst(b []byte) []byte {
	var head, rest []byte
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if len(l) > 0 && l[0] == '#' {
			head = append(head, l...)
		} else {
			rest = append(rest, l...)
		}
	}
	return append(head, rest...)
}

// shortDecimal gives what strconv.ParseFloat gives, bit for bit, for
// every value it reads, and reads the short decimals counters and buckets
// hold.
func FuzzShortDecimal(f *testing.F) {
	for _, s := range []string{"0", "0.0", "253731.45", "1.", ".5", ".", "", "123456789012345", "1234567890123456",
		"0.000000000000001", "999999999999999", "9007199254740993", "1.5e3", "-1", "+1", "1..2", "0x10", "1_000", "Inf", "00000000000000.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := shortDecimal([]byte(s))
		want, err := strconv.ParseFloat(s, 64)
		if !ok {
			if len(s) > 0 && len(s) <= 16 && strings.Count(s, ".") <= 1 && strings.Trim(s, "0123456789.") == "" && strings.Trim(s, ".") != "" && len(strings.ReplaceAll(s, ".", "")) <= 15 {
				t.Fatalf("%q: not read", s)
			}
			return
		}
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: %v (%x), ParseFloat %v (%x) %v", s, got, math.Float64bits(got), want, math.Float64bits(want), err)
		}
	})
}

// Random short decimals, every digit count and point place: shortDecimal
// reads each, bit for bit as strconv.ParseFloat.
func TestShortDecimalRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 15))
	for range 200000 {
		n := 1 + r.IntN(15)
		b := make([]byte, 0, n+1)
		for range n {
			b = append(b, byte('0'+r.IntN(10)))
		}
		if p := r.IntN(n + 2); p <= n {
			b = append(b[:p], append([]byte{'.'}, b[p:]...)...)
		}
		got, ok := shortDecimal(b)
		want, err := strconv.ParseFloat(string(b), 64)
		if !ok || err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: %v %v, ParseFloat %v %v", b, got, ok, want, err)
		}
	}
}

// keySet finds a key shown twice as a map would, body after body (its
// slots are not cleared between them), keys colliding in the table
// included.
func TestKeySetAsMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s keySet
	for body := range 300 {
		n := rng.IntN(200)
		s.reset(n)
		want := map[uint64]bool{}
		for range n {
			k := rng.Uint64N(uint64(n/2+1)) << (rng.IntN(3) * 20) // few distinct keys, shared low bits
			if got := s.add(k); got != want[k] {
				t.Fatalf("body %d: key %x shown before: %v, want %v", body, k, got, want[k])
			}
			want[k] = true
		}
	}
	var u keySet
	u.reset(4) // epoch 1
	u.add(7)
	u.epoch = ^uint32(0) // the next body wraps the epoch to 1 again
	u.reset(4)
	if u.add(7) || !u.add(7) {
		t.Fatal("after the epoch wrapped, a key of the body with the same epoch read as shown, or a second showing not")
	}
}
