package diagnose

import (
	"math"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/sim"
)

// TestSparkStatsAsStats: the point a sparkline draws from sparkStats is the
// one it drew from the full stats, bit for bit, at every scrape of
// replicas covering the scenarios whose figures a point carries (aborts,
// preemption, swapping, data-parallel engines, older releases), for each
// endpoint and for the fleet.
func TestSparkStatsAsStats(t *testing.T) {
	var cfgs []sim.ReplicaConfig
	for _, sc := range []string{"busy", "abort-storm", "kv-thrashing", "prefix-cache-miss", "restart"} {
		cfgs = append(cfgs, sim.ReplicaConfig{Scenarios: []sim.ScenarioSpec{{Name: sc}}})
	}
	cfgs = append(cfgs, sim.ReplicaConfig{DP: 2, Scenarios: []sim.ScenarioSpec{{Name: "busy"}}},
		sim.ReplicaConfig{Profile: "v0.6", Scenarios: []sim.ScenarioSpec{{Name: "swapping"}}})
	f, err := sim.NewFleet(sim.FleetConfig{Replicas: cfgs}, 1)
	if err != nil {
		t.Fatal(err)
	}
	infos := make([]TargetInfo, len(cfgs))
	norms := make([]*sources.Normalizer, len(cfgs))
	for i, r := range f.Replicas() {
		infos[i].Name, norms[i] = r.Name(), sources.NewNormalizer()
	}
	e := New(Config{Window: 60 * time.Second, Interval: time.Second}, infos)
	same := func(what string, a, b *acc, at time.Time) {
		t.Helper()
		full, spark := a.stats(), b.sparkStats()
		p, q := sparkPoint(at, &full), sparkPoint(at, &spark)
		for k := range p.V {
			if math.Float32bits(p.V[k]) != math.Float32bits(q.V[k]) {
				t.Fatalf("%s at %s: spark value %d is %v from sparkStats, %v from stats", what, at, k, q.V[k], p.V[k])
			}
		}
	}
	for range 150 {
		f.Advance(time.Second)
		fleetSp := newAcc()
		for i, r := range f.Replicas() {
			s := r.Scrape(norms[i], sim.FormatText)
			e.Ingest(i, s)
			ep := e.eps[i]
			a, b := ep.sp.clone(), ep.sp.clone()
			same(r.Name(), &a, &b, s.Time)
			fleetSp.merge(&ep.sp)
		}
		a, b := fleetSp.clone(), fleetSp.clone()
		same("fleet", &a, &b, f.Now())
	}
}

// clone copies an acc with its own labeled slices (stats sorts them).
func (x *acc) clone() acc {
	c := *x
	c.finish = append([]labeledRate(nil), x.finish...)
	c.reject = append([]labeledRate(nil), x.reject...)
	return c
}
