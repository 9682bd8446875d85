package ui

import (
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/diagnose/detect"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

// simFrame runs a simulated fleet through the real path (exposition →
// normalizer → engine → detector) for d, one scrape a second, and returns
// the last frame.
func simFrame(t *testing.T, rcs []sim.ReplicaConfig, d time.Duration) *diagnose.Frame {
	t.Helper()
	fl, err := sim.NewFleet(sim.FleetConfig{Replicas: rcs}, 7)
	if err != nil {
		t.Fatal(err)
	}
	var infos []diagnose.TargetInfo
	var norms []*sources.Normalizer
	for _, r := range fl.Replicas() {
		infos = append(infos, diagnose.TargetInfo{Name: r.Name(), MaxNumSeqs: r.Config().MaxNumSeqs})
		norms = append(norms, sources.NewNormalizer())
	}
	eng := diagnose.New(diagnose.Config{}, infos)
	det, err := detect.NewDetector(detect.RulesConfig{SLO: diagnose.SLOProfiles()[0]})
	if err != nil {
		t.Fatal(err)
	}
	var fr *diagnose.Frame
	for fl.Elapsed() < d {
		fl.Advance(time.Second)
		for i, r := range fl.Replicas() {
			eng.Ingest(i, r.Scrape(norms[i], sim.FormatOpenMetrics))
		}
		fr = eng.Frame(fl.Now())
		det.Evaluate(fr)
	}
	return fr
}

// mixedFrame: two vLLM replicas and two SGLang ones, one of each with its
// KV cache filling; three minutes in.
func mixedFrame(t *testing.T) *diagnose.Frame {
	return simFrame(t, []sim.ReplicaConfig{
		{Name: "vllm-0", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
		{Name: "sglang-0", Profile: "sglang", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
		{Name: "vllm-1", Scenarios: []sim.ScenarioSpec{{Name: "kv-thrashing", Delay: time.Minute}}},
		{Name: "sglang-1", Profile: "sglang", Scenarios: []sim.ScenarioSpec{{Name: "kv-thrashing", Delay: time.Minute}}},
	}, 3*time.Minute)
}

// A fleet of vLLM and SGLang: the table names each endpoint's engine; the
// SGLang endpoint's view says what SGLang does not expose, and its
// finding's flags are SGLang's.
func TestGoldenMixedEngines(t *testing.T) {
	fr := mixedFrame(t)
	for _, sz := range [][2]int{{80, 24}, {200, 60}} {
		t.Run(sizeName(sz), func(t *testing.T) {
			m := newTestModel(fr, sz[0], sz[1], Options{})
			checkLayout(t, m)
			golden.RequireEqual(t, m.View())
		})
		t.Run("sglang-1/"+sizeName(sz), func(t *testing.T) {
			m := newTestModel(fr, sz[0], sz[1], Options{})
			selectEndpoint(t, m, "sglang-1")
			press(m, "enter")
			checkLayout(t, m)
			golden.RequireEqual(t, m.View())
		})
	}
}

func sizeName(sz [2]int) string { return itoa(sz[0]) + "x" + itoa(sz[1]) }
