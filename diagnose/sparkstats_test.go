package diagnose

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

// TestSparkStatsAsStats: the point a sparkline draws from sparkStats is the
// one it drew from the full stats, bit for bit, at every scrape of
// replicas covering the scenarios whose figures a point carries (aborts,
// preemption, swapping, data-parallel engines, older releases), for each
// endpoint and for the fleet.
func TestSparkStatsAsStats(t *testing.T) {
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
	e := scenarioEngine(t, func(e *Engine, i int, name string, at time.Time) {
		a, b := e.eps[i].sp.clone(), e.eps[i].sp.clone()
		same(name, &a, &b, at)
	})
	fleetSp := newAcc()
	for _, ep := range e.eps {
		fleetSp.merge(&ep.sp)
	}
	a, b := fleetSp.clone(), fleetSp.clone()
	same("fleet", &a, &b, e.eps[0].lastSuccess)
}

// TestOneSubStatsAsWin: an endpoint with one sub-series takes that
// sub-series' stats as its own; they are what its window acc gives, as
// derive computed them before (printed with every bit of every float).
func TestOneSubStatsAsWin(t *testing.T) {
	checked := 0
	scenarioEngine(t, func(e *Engine, i int, name string, at time.Time) {
		ep := e.eps[i]
		if ep.snap == nil || len(ep.refs) != 1 {
			return
		}
		sub := ep.refs[0]
		one := subWindow(ep.subs[sub.key], at, e.cfg.Window, sub.cache)
		win := newAcc()
		win.merge(&one)
		win.addStatus(ep.http, at, e.cfg.Window) // the endpoint's own, as derive adds
		if got, want := fmt.Sprintf("%+v", *ep.stats), fmt.Sprintf("%+v", win.stats()); got != want {
			t.Fatalf("%s at %s: stats\n%s\nwant\n%s", name, at, got, want)
		}
		checked++
	})
	if checked == 0 {
		t.Fatal("no endpoint with one sub-series")
	}
}

// scenarioEngine ingests 150 s of replicas covering many scenarios into an
// engine, calling check after each scrape.
func scenarioEngine(t *testing.T, check func(e *Engine, i int, name string, at time.Time)) *Engine {
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
	for range 150 {
		f.Advance(time.Second)
		for i, r := range f.Replicas() {
			s := r.Scrape(norms[i], sim.FormatText)
			e.Ingest(i, s)
			check(e, i, r.Name(), s.Time)
		}
	}
	return e
}

// clone copies an acc with its own labeled slices (stats sorts them).
func (x *acc) clone() acc {
	c := *x
	c.finish = append([]labeledRate(nil), x.finish...)
	c.reject = append([]labeledRate(nil), x.reject...)
	return c
}
