package sources

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"
)

// Targets sharing SeriesClasses get the snapshots (and errors) they get
// alone, over captures and hostile bodies and their mutations (new series,
// broken lines, repeated ones), with a bound small enough to start over
// many times.
func TestSharedClassesMatchAlone(t *testing.T) {
	var seqs [][][]byte
	for _, name := range dumpNames(t) {
		for seed := uint64(0); seed < 4; seed++ {
			seqs = append(seqs, sequence(seed, published(t, name), 6))
		}
	}
	for i, body := range hostileSeeds() {
		seqs = append(seqs, sequence(uint64(i)<<8, []byte(body), 6))
	}
	var hits uint64
	for _, bound := range []int{1 << 15, 40} {
		classes := NewSeriesClasses(bound)
		for si, bodies := range seqs {
			// Each body is a target's first; the next one its second.
			for k := 0; k+1 < len(bodies); k++ {
				shared, alone := NewNormalizer(), NewNormalizer()
				shared.Classes, alone.Classes = classes, NewSeriesClasses(1<<15)
				for _, b := range bodies[k : k+2] {
					for _, ct := range []string{textCT0, omCT} {
						s1, e1 := shared.Normalize(b, ct)
						s2, e2 := alone.Normalize(b, ct)
						if fmt.Sprint(e1) != fmt.Sprint(e2) {
							t.Fatalf("sequence %d body %d (%s): shared error %v, alone %v\n%s", si, k, ct, e1, e2, b)
						}
						if d := diffValues(reflect.ValueOf(s1), reflect.ValueOf(s2), "snapshot"); d != "" {
							t.Fatalf("sequence %d body %d (%s): shared and alone differ at %s\n%s", si, k, ct, d, b)
						}
					}
				}
			}
		}
		hits += classes.hits.Load()
	}
	if hits == 0 {
		t.Fatal("no first sight was answered from the shared classes: the comparison says nothing")
	}
}

// Classes are keyed by a 64-bit hash of the series text; a class filed
// under the key of another text is never taken for it.
func TestSharedClassesCompareText(t *testing.T) {
	running := "vllm:num_requests_running{model_name=\"m\"}"
	waiting := "vllm:num_requests_waiting{model_name=\"m\"}"
	classes := NewSeriesClasses(16)
	n := NewNormalizer()
	n.Classes = classes
	if _, err := n.Normalize([]byte(running+" 3\n"), textCT0); err != nil {
		t.Fatal(err)
	}
	// The running gauge's class, as if the waiting gauge's text hashed alike.
	classes.m[seriesKey([]byte(waiting))] = sharedClass{series: running, class: classes.m[seriesKey([]byte(running))].class}
	m := NewNormalizer()
	m.Classes = classes
	snap, err := m.Normalize([]byte(waiting+" 5\n"), textCT0)
	if err != nil {
		t.Fatal(err)
	}
	g := snap.Subs[0].Gauges
	if g[GWaiting] != 5 || g[GRunning] == 5 {
		t.Fatalf("waiting %v, running %v: the other text's class was taken", g[GWaiting], g[GRunning])
	}
}

// Targets with the same bucket layout share one Bounds array; another
// layout keeps its own.
func TestSharedBounds(t *testing.T) {
	hist := func(le string) []byte {
		return []byte("# TYPE vllm:time_to_first_token_seconds histogram\n" +
			"vllm:time_to_first_token_seconds_bucket{le=\"" + le + "\",model_name=\"m\"} 1\n" +
			"vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 2\n" +
			"vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 1\n" +
			"vllm:time_to_first_token_seconds_count{model_name=\"m\"} 2\n")
	}
	bounds := func(body []byte) []float64 {
		s, err := NewNormalizer().Normalize(body, textCT0)
		if err != nil {
			t.Fatal(err)
		}
		return s.Subs[0].Hists[HTTFT].Bounds
	}
	a, b := bounds(hist("0.5")), bounds(hist("0.50"))
	if &a[0] != &b[0] || cap(a) != len(a) {
		t.Error("two targets with one layout keep two copies of it (or may append to it)")
	}
	if c := bounds(hist("0.25")); c[0] != 0.25 || a[0] != 0.5 {
		t.Errorf("bounds %v and %v: another layout was taken for this one", a, c)
	}
}

// The classes of one sub-series share the strings of its key, so slotOf's
// check per sample compares pointers.
func TestClassesShareSubKeys(t *testing.T) {
	n := NewNormalizer()
	n.Classes = NewSeriesClasses(1 << 15)
	if _, err := n.Normalize(published(t, "armandossrecife-vllm-server-api-chat__v0.10.1-ngc25.09_full.txt"), textCT0); err != nil {
		t.Fatal(err)
	}
	var first *class
	signals := 0
	for _, c := range n.fp.ent {
		if c == nil || c.kind != eSignal {
			continue
		}
		signals++
		if first == nil {
			first = c
			continue
		}
		if c.sub != first.sub || unsafe.StringData(c.sub.Model) != unsafe.StringData(first.sub.Model) {
			t.Fatalf("classes of %q keep their own copies of its model name", first.sub.Model)
		}
	}
	if signals < 100 {
		t.Fatalf("%d signal lines: the capture was not tracked", signals)
	}
}
