package detect

import (
	"math/rand/v2"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// SortFindings orders random findings exactly as the plain stable sort by
// the documented order does: severity, causes before symptoms, first seen,
// target, rule, model, engine, ID. Ties and duplicates are many, so
// stability is tested too.
func TestSortFindingsOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 23))
	for run := range 300 {
		fs := randomFindings(r, r.IntN(60), 3)
		want := append([]diagnose.Finding(nil), fs...)
		sort.SliceStable(want, plainLess(want))
		SortFindings(fs)
		for i := range fs {
			if !reflect.DeepEqual(fs[i], want[i]) {
				t.Fatalf("run %d: at %d got %+v\nwant %+v", run, i, fs[i], want[i])
			}
		}
	}
}

// BenchmarkSortFindings: 400 findings (two on each of 200 endpoints), the
// way SortFindings sorts them and the plain sort.SliceStable it replaced.
func BenchmarkSortFindings(b *testing.B) {
	src := randomFindings(rand.New(rand.NewPCG(1, 2)), 400, 200)
	fs := make([]diagnose.Finding, len(src))
	b.Run("keys", func(b *testing.B) {
		for b.Loop() {
			copy(fs, src)
			SortFindings(fs)
		}
	})
	b.Run("slicestable", func(b *testing.B) {
		for b.Loop() {
			copy(fs, src)
			sort.SliceStable(fs, plainLess(fs))
		}
	})
}

// plainLess is the documented order as a less function.
func plainLess(fs []diagnose.Finding) func(i, j int) bool {
	return func(i, j int) bool {
		a, b := &fs[i], &fs[j]
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		if sa, sb := isSymptom(a), isSymptom(b); sa != sb {
			return sb
		}
		if !a.FirstSeen.Equal(b.FirstSeen) {
			return a.FirstSeen.Before(b.FirstSeen)
		}
		if a.Target != b.Target {
			return a.Target < b.Target
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		if a.Engine != b.Engine {
			return a.Engine < b.Engine
		}
		return a.ID() < b.ID()
	}
}

func randomFindings(r *rand.Rand, n, targets int) []diagnose.Finding {
	rules := []string{"preemption", "queue_backlog", "slo_breach", "endpoint_down", "kv_cache_thrashing", "engine_stalled"}
	pick := func(ss ...string) string { return ss[r.IntN(len(ss))] }
	t0 := time.Unix(1_800_000_000, 0)
	fs := make([]diagnose.Finding, n)
	for i := range fs {
		fs[i] = diagnose.Finding{Severity: diagnose.Severity(r.IntN(3)), Rule: pick(rules...),
			Target: ":" + strconv.Itoa(r.IntN(targets)), Model: pick("", "m1", "m2"), Engine: pick("", "0", "1"),
			FirstSeen: t0.Add(time.Duration(r.IntN(3)) * time.Second), Cause: pick("", "", "kv_cache_thrashing@:1"),
			Summary: diagnose.Plain(string(rune('A' + i%26)))} // tells equal keys apart: stability
	}
	return fs
}
