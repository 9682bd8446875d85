package sources

import (
	"fmt"
	"reflect"
	"testing"
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
