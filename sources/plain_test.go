package sources

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
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
