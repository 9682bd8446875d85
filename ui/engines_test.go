package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/diagnose/detect"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
	f "github.com/vtop-dev/vtop/ui/format"
	"github.com/vtop-dev/vtop/ui/report"
)

// simFrame runs a simulated fleet through the real path (exposition →
// normalizer → engine → detector) for d, one scrape a second, and returns
// the last frame.
func simFrame(t *testing.T, rcs []sim.ReplicaConfig, d time.Duration, pools ...string) *diagnose.Frame {
	t.Helper()
	fl, err := sim.NewFleet(sim.FleetConfig{Replicas: rcs}, 7)
	if err != nil {
		t.Fatal(err)
	}
	var infos []diagnose.TargetInfo
	var norms []*sources.Normalizer
	for i, r := range fl.Replicas() {
		info := diagnose.TargetInfo{Name: r.Name(), MaxNumSeqs: r.Config().MaxNumSeqs}
		if i < len(pools) {
			info.Pool = pools[i] // as a target's pool: in the config file
		}
		infos = append(infos, info)
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

// featuresFrame: a vLLM replica drafting 3 speculative tokens, one serving
// three LoRA adapters with two slots, and a plain one; three minutes in.
func featuresFrame(t *testing.T) *diagnose.Frame {
	lora := sim.ChatLoad()
	lora.Adapters = 3
	return simFrame(t, []sim.ReplicaConfig{
		{Name: "spec-0", SpecTokens: 3, SpecAccept: 0.7, Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
		{Name: "lora-0", MaxLoras: 2, Load: &lora, Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
		{Name: "plain-0", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
	}, 3*time.Minute)
}

// The endpoint view shows a panel for what the server exposes, and only
// that: speculative decoding on spec-0, LoRA on lora-0, neither on plain-0.
func TestGoldenFeatures(t *testing.T) {
	fr := featuresFrame(t)
	for _, name := range []string{"spec-0", "lora-0", "plain-0"} {
		for _, sz := range [][2]int{{80, 24}, {200, 60}} {
			t.Run(name+"/"+sizeName(sz), func(t *testing.T) {
				m := newTestModel(fr, sz[0], sz[1], Options{})
				selectEndpoint(t, m, name)
				press(m, "enter")
				checkLayout(t, m)
				golden.RequireEqual(t, m.View())
			})
		}
	}
}

// The JSON report carries the numbers the panels show: the acceptance and
// per-position shares, the adapters; null where the server exposes none.
func TestFeaturesJSONMatchesScreen(t *testing.T) {
	fr := featuresFrame(t)
	r := report.BuildJSONRun(fr, "test", report.OK, report.Run{Window: fr.Window, Elapsed: fr.Window})
	views := map[string]string{}
	for _, name := range []string{"spec-0", "lora-0", "plain-0"} {
		m := newTestModel(fr, 200, 60, Options{})
		selectEndpoint(t, m, name)
		press(m, "enter")
		views[name] = ansi.Strip(m.View())
	}
	for _, e := range r.Endpoints {
		v := views[e.Name]
		sp := e.Stats.Speculative
		switch e.Name {
		case "spec-0":
			if sp == nil || len(sp.AcceptedByPosition) != 3 {
				t.Fatalf("spec-0: speculative %+v", sp)
			}
			want := []string{"accept " + f.Percent(float64(sp.Nums.Get(diagnose.StatSpecAccept))), "tokens/step " + f.Dec(float64(sp.Nums.Get(diagnose.StatSpecAcceptLen)), 2)}
			var pos []string
			for _, p := range sp.AcceptedByPosition {
				pos = append(pos, f.Percent(float64(p)))
			}
			want = append(want, "by position "+strings.Join(pos, " "))
			for _, w := range want {
				if !strings.Contains(v, w) {
					t.Errorf("spec-0: the screen lacks %q, which the JSON says", w)
				}
			}
			// 0.7 per token: positions accept 70%, 49%, 34%; 1 + 1.53 tokens a step.
			if a := float64(sp.AcceptedByPosition[0]); a < 0.69 || a > 0.71 {
				t.Errorf("position 0 accepted %v, want 0.7", a)
			}
			if e.LoRA != nil && e.LoRA.MaxLoRA > 0 {
				t.Errorf("spec-0 has LoRA %+v", e.LoRA)
			}
		case "lora-0":
			if e.LoRA == nil || e.LoRA.MaxLoRA != 2 || len(e.LoRA.Running) == 0 {
				t.Fatalf("lora-0: %+v", e.LoRA)
			}
			if !strings.Contains(v, "running "+strings.Join(e.LoRA.Running, ",")) || !strings.Contains(v, "max_lora 2") {
				t.Errorf("lora-0: the screen does not show the JSON's adapters %+v", e.LoRA)
			}
			if sp != nil {
				t.Errorf("lora-0 reports speculation %+v", sp)
			}
		case "plain-0":
			if sp != nil || e.Stats.KVTransfer != nil || (e.LoRA != nil && e.LoRA.MaxLoRA > 0) {
				t.Errorf("plain-0 reports features it does not expose: %+v %+v %+v", sp, e.Stats.KVTransfer, e.LoRA)
			}
			// The panels' titles, right of the divider: a pool's verdict
			// may name LoRA slots in the findings.
			if strings.Contains(v, "│ Spec ") || strings.Contains(v, "│ LoRA") {
				t.Errorf("plain-0 shows a panel it does not expose")
			}
		}
	}
}

// poolsFrame: two model pools of two replicas each; one Llama replica's
// KV cache fills a minute in, the other three stay healthy.
func poolsFrame(t *testing.T) *diagnose.Frame {
	return simFrame(t, []sim.ReplicaConfig{
		{Name: "llama-0", Model: sim.Models[0], Scenarios: []sim.ScenarioSpec{{Name: "kv-thrashing", Delay: time.Minute}}},
		{Name: "llama-1", Model: sim.Models[0], Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
		{Name: "qwen-0", Model: sim.Models[1], Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
		{Name: "qwen-1", Model: sim.Models[1], Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
	}, 3*time.Minute)
}

// Each model pool's verdict shows under the verdict of what the view
// shows: in the fleet's every pool, since they differ; in a healthy
// replica's view its pool's, where the other replica's KV cache binds; in
// a pool whose verdict is the endpoint's own, no second line.
func TestGoldenPoolVerdicts(t *testing.T) {
	fr := poolsFrame(t)
	llama, qwen := shortModel(sim.Models[0].Name), shortModel(sim.Models[1].Name)
	for _, sz := range [][2]int{{80, 24}, {200, 60}} {
		t.Run(sizeName(sz), func(t *testing.T) {
			m := newTestModel(fr, sz[0], sz[1], Options{})
			checkLayout(t, m)
			v := ansi.Strip(m.View())
			for _, want := range []string{"pools ", llama + ": KV cache (1 of 2 endpoints)", qwen + ": no bottleneck"} {
				if sz[0] == 200 && !strings.Contains(v, want) {
					t.Errorf("the fleet's findings pane lacks %q:\n%s", want, v)
				}
			}
			golden.RequireEqual(t, m.View())
		})
		for _, name := range []string{"llama-1", "qwen-0"} {
			t.Run(name+"/"+sizeName(sz), func(t *testing.T) {
				m := newTestModel(fr, sz[0], sz[1], Options{})
				selectEndpoint(t, m, name)
				press(m, "enter")
				checkLayout(t, m)
				v := ansi.Strip(m.View())
				has := strings.Contains(v, "pool "+llama+": KV cache (1 of 2 endpoints)")
				if has != (name == "llama-1") {
					t.Errorf("%s: the pool's verdict shown %v, want %v:\n%s", name, has, name == "llama-1", v)
				}
				golden.RequireEqual(t, m.View())
			})
		}
	}
}

// Pools the configuration names take the models' place: the fleet shows
// each one's verdict, and a replica its own pool's (us-east holds the
// thrashing Llama replica and a healthy Qwen one; us-west the other two).
func TestGoldenConfiguredPoolVerdicts(t *testing.T) {
	fr := simFrame(t, []sim.ReplicaConfig{
		{Name: "llama-0", Model: sim.Models[0], Scenarios: []sim.ScenarioSpec{{Name: "kv-thrashing", Delay: time.Minute}}},
		{Name: "llama-1", Model: sim.Models[0], Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
		{Name: "qwen-0", Model: sim.Models[1], Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
		{Name: "qwen-1", Model: sim.Models[1], Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
	}, 3*time.Minute, "us-east", "us-west", "us-east", "us-west")
	for _, sz := range [][2]int{{80, 24}, {200, 60}} {
		t.Run(sizeName(sz), func(t *testing.T) {
			m := newTestModel(fr, sz[0], sz[1], Options{})
			checkLayout(t, m)
			if v := ansi.Strip(m.View()); !strings.Contains(v, "pools us-east: KV cache (1 of 2 endpoints) · us-west: no bottleneck") {
				t.Errorf("the fleet's findings pane lacks the configured pools' verdicts:\n%s", v)
			}
			golden.RequireEqual(t, m.View())
		})
		t.Run("qwen-0/"+sizeName(sz), func(t *testing.T) {
			m := newTestModel(fr, sz[0], sz[1], Options{})
			selectEndpoint(t, m, "qwen-0")
			press(m, "enter")
			checkLayout(t, m)
			if v := ansi.Strip(m.View()); !strings.Contains(v, "pool us-east: KV cache (1 of 2 endpoints)") {
				t.Errorf("qwen-0's view lacks its pool's verdict:\n%s", v)
			}
			golden.RequireEqual(t, m.View())
		})
	}
}
