package sim_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

// pipeline drives a fleet at accelerated time through the real path a
// scrape takes: exposition → sources.Normalizer → diagnose.Engine, one
// scrape per replica per simulated second.
type pipeline struct {
	t      testing.TB
	fleet  *sim.Fleet
	norms  []*sources.Normalizer
	engine *diagnose.Engine
	format sim.Format
	last   []sources.Scrape
	// each, when set, sees every scrape (for checks over time).
	each func(i int, s sources.Scrape)
}

func newPipeline(t testing.TB, cfg sim.FleetConfig, seed uint64, window ...time.Duration) *pipeline {
	t.Helper()
	f, err := sim.NewFleet(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	p := &pipeline{t: t, fleet: f, format: sim.FormatOpenMetrics}
	var infos []diagnose.TargetInfo
	for _, r := range f.Replicas() {
		p.norms = append(p.norms, sources.NewNormalizer())
		infos = append(infos, diagnose.TargetInfo{Name: r.Name(), MaxNumSeqs: r.Config().MaxNumSeqs})
	}
	dc := diagnose.Config{}
	if len(window) > 0 {
		dc.Window = window[0]
	}
	p.engine = diagnose.New(dc, infos)
	p.last = make([]sources.Scrape, len(f.Replicas()))
	return p
}

// run advances d, scraping every second, and returns the frame at the end.
func (p *pipeline) run(d time.Duration) *diagnose.Frame {
	p.t.Helper()
	for end := p.fleet.Elapsed() + d; p.fleet.Elapsed() < end; {
		p.fleet.Advance(time.Second)
		for i, r := range p.fleet.Replicas() {
			s := r.Scrape(p.norms[i], p.format)
			if s.Err == nil && len(s.Data.Warnings) > 0 {
				p.t.Fatalf("%s: normalizer warnings: %v", r.Name(), s.Data.Warnings)
			}
			if s.Err != nil && s.Err.Error() != "connection refused (is vLLM running on this port?)" {
				p.t.Fatalf("%s: scrape: %v", r.Name(), s.Err)
			}
			p.last[i] = s
			p.engine.Ingest(i, s)
			if p.each != nil {
				p.each(i, s)
			}
		}
	}
	return p.engine.Frame(p.fleet.Now())
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func one(rc sim.ReplicaConfig) sim.FleetConfig {
	return sim.FleetConfig{Replicas: []sim.ReplicaConfig{rc}}
}
