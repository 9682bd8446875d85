package detect_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/format"
	"github.com/vtop-dev/vtop/ui/report"
)

// vllmOnly are flags an SGLang server does not take: none may reach an
// SGLang operator, in a flag change or in the words around it.
var vllmOnly = []string{"--max-num-seqs", "--max-num-batched-tokens", "--gpu-memory-utilization",
	"--enable-chunked-prefill", "--enable-prefix-caching", "--swap-space", "--max-model-len"}

func vllmFlagIn(fd *diagnose.Finding) string {
	texts := []string{format.Say(fd.Summary), format.Say(fd.Explain), format.Say(fd.Action)}
	for _, fc := range fd.Flags {
		texts = append(texts, fc.Flag, format.Value(fc.From), format.Value(fc.To), format.Say(fc.Why))
	}
	for _, t := range texts {
		for _, f := range vllmOnly {
			if strings.Contains(t, f) {
				return f + " in " + t
			}
		}
	}
	return ""
}

// A simulated SGLang replica (SGLang's names, labels and buckets) serving
// healthy or busy traffic stays quiet over every rule's for.
func TestSGLangHealthyStaysQuiet(t *testing.T) {
	run := incidentAt + 2*ruleFor(t, "memory_leak") + time.Minute
	for _, sc := range []string{"healthy", "busy"} {
		t.Run(sc, func(t *testing.T) {
			t.Parallel()
			p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "sgl-0", Profile: "sglang",
				Scenarios: []sim.ScenarioSpec{{Name: sc, Delay: incidentAt}}})
			for p.fleet.Elapsed() < run {
				f := p.step()
				if s := f.Endpoints[0].Version.Server.String(); s != "SGLang" {
					t.Fatalf("read as %s", s)
				}
				for _, fd := range f.Findings {
					if fd.Severity > diagnose.SevInfo {
						t.Fatalf("%s at %v: %s: %s", fd.Severity, p.fleet.Elapsed(), fd.Rule, format.Say(fd.Summary))
					}
				}
			}
		})
	}
}

// An SGLang replica whose token pool fills and which retracts requests is
// named within 30 s, with SGLang's --max-running-requests computed from its
// pool, and no finding on it ever names a flag SGLang lacks.
func TestSGLangFullPoolNamedWithItsFlags(t *testing.T) {
	p := newScenarioPipeline(t, sim.ReplicaConfig{Name: "sgl-0", Profile: "sglang",
		Scenarios: []sim.ScenarioSpec{{Name: "kv-thrashing", Delay: incidentAt}}})
	causes := []string{"kv_cache_saturated", "kv_cache_thrashing", "preemption"}
	var named *diagnose.Finding
	var at time.Duration
	thrashing := false
	for p.fleet.Elapsed() < incidentAt+3*time.Minute {
		f := p.step()
		if v := f.Endpoints[0].Verdict.Flag; v != nil && slices.Contains(vllmOnly, v.Flag) {
			t.Fatalf("the verdict on an SGLang server names %s", v.Flag)
		}
		for _, fd := range append(f.Findings, f.Pending...) {
			if w := vllmFlagIn(&fd); w != "" {
				t.Fatalf("%s on an SGLang server names a vLLM flag: %s", fd.Rule, w)
			}
			if named == nil && slices.Contains(causes, fd.Rule) && fd.Target == "sgl-0" {
				named, at = &fd, p.fleet.Elapsed()-incidentAt
			}
			thrashing = thrashing || (fd.Rule == "kv_cache_thrashing" && fd.State == diagnose.FindingFiring)
		}
	}
	if named == nil {
		t.Fatal("the full, retracting SGLang replica was never named")
	}
	t.Logf("%s (%s) %v after the incident: %s → %s", named.Rule, named.State, at, format.Say(named.Summary), format.Say(named.Action))
	if at > 30*time.Second {
		t.Errorf("named %v after the incident, want within 30 s", at)
	}
	i := slices.IndexFunc(named.Flags, func(fc diagnose.FlagChange) bool { return fc.Flag == "--max-running-requests" })
	if i < 0 || !number.MatchString(format.Value(named.Flags[i].To)) {
		t.Errorf("no computed --max-running-requests: %+v", named.Flags)
	}
	if !thrashing {
		t.Error("kv_cache_thrashing never fired on the retracting replica")
	}
}

// Every scenario the simulator can serve as SGLang, opened three minutes
// in and read for two: no verdict line and no finding names a flag SGLang
// lacks. The verdict's limit names carry vLLM's flags: a batch-capped
// SGLang replica read "batch cap (--max-num-seqs)", and a tail-only SLO
// breach "V0: (no SGLang flag: …)".
func TestSGLangEveryScenarioInItsTerms(t *testing.T) {
	for _, sc := range sim.Scenarios {
		rc := sim.ReplicaConfig{Name: "sgl-0", Profile: "sglang", Scenarios: []sim.ScenarioSpec{{Name: sc.Name}}}
		if _, err := sim.NewFleet(sim.FleetConfig{Replicas: []sim.ReplicaConfig{rc}}, seed); err != nil {
			continue // V0-only, or P/D disaggregation (vLLM's NixlConnector)
		}
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			p := newScenarioPipeline(t, rc)
			for p.fleet.Elapsed() < 3*time.Minute {
				p.fleet.Advance(time.Second)
			}
			for p.fleet.Elapsed() < 5*time.Minute {
				f := p.step()
				line := report.VerdictLine(&f.Endpoints[0].Verdict, false)
				for _, fl := range vllmOnly {
					if strings.Contains(line, fl) {
						t.Fatalf("at %v the verdict names %s: %s", p.fleet.Elapsed(), fl, line)
					}
				}
				for _, fd := range append(f.Findings, f.Pending...) {
					if w := vllmFlagIn(&fd); w != "" {
						t.Fatalf("at %v %s names a vLLM flag: %s", p.fleet.Elapsed(), fd.Rule, w)
					}
					if a := format.Say(fd.Action); strings.Contains(a, "V0:") || strings.Contains(a, "V0 ") {
						t.Fatalf("at %v %s advises for vLLM V0: %s", p.fleet.Elapsed(), fd.Rule, a)
					}
				}
			}
		})
	}
}
