package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// One verdict first: the fleet, each pool (when several) and each endpoint
// get an assessment line above the findings, in the text report and in
// JSON, built from the verdict's numbers.
func TestVerdictLines(t *testing.T) {
	now := time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)
	up := func(name, model string, v diagnose.Verdict) diagnose.EndpointView {
		return diagnose.EndpointView{Name: name, State: diagnose.StateUp, Kind: sources.KindEngine, Models: []string{model},
			LastSuccess: now, Stats: diagnose.UnknownStats(), Verdict: v}
	}
	arr := diagnose.Verdict{Limit: diagnose.LimitArrivals, Under: diagnose.LimitBatchCap, Signals: 4, Of: 5, Replicas: 3, Now: 1, Gain: 0.05,
		Flag: &diagnose.FlagChange{Flag: "--max-num-seqs", From: diagnose.Str("256"), To: diagnose.Str("269")}}
	fr := &diagnose.Frame{Time: now, Window: time.Minute, Interval: time.Second,
		Endpoints: []diagnose.EndpointView{
			up("a", "m1", arr),
			up("b", "m2", diagnose.Verdict{Limit: diagnose.LimitIdle}),
			up("c", "m2", diagnose.Verdict{Limit: diagnose.LimitUnexplained, Ruled: []diagnose.Limit{diagnose.LimitKVCache, diagnose.LimitBatchCap}}),
		},
		Fleet: diagnose.FleetView{Up: 3, Total: 3, Stats: diagnose.UnknownStats(),
			Verdict: diagnose.Verdict{Limit: diagnose.LimitMixed, Signals: 2, Of: 3},
			Models: []diagnose.ModelView{{Model: "m1", Endpoints: 1, Stats: diagnose.UnknownStats(), Verdict: diagnose.Verdict{Limit: diagnose.LimitArrivals, Signals: 1, Of: 1}},
				{Model: "m2", Endpoints: 2, Stats: diagnose.UnknownStats(), Verdict: diagnose.Verdict{Limit: diagnose.LimitUnexplained, Signals: 1, Of: 2}}}}}
	var b strings.Builder
	if err := WriteTextRun(&b, fr, OK, Run{Window: time.Minute, Elapsed: time.Minute}); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"assessment\n  fleet  bottleneck: no clear bottleneck: members disagree (2 of 3 endpoints with a symptom)\n",
		"  pool m1  bottleneck: arrivals exceed capacity (1 of 1 endpoints)\n",
		"  a  bottleneck: arrivals exceed capacity, 4 of 5 signals agree: about 3 replicas instead of 1; the batch cap (--max-num-seqs) binds, --max-num-seqs 256 → 269 adds 5%, the smaller part\n",
		"  b  bottleneck: idle\n",
		"  c  bottleneck: unexplained: no limit binds on the evidence; ruled out: kv_cache, batch_cap\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "assessment") > strings.Index(text, "findings") {
		t.Errorf("the assessment is not above the findings:\n%s", text)
	}
	js, err := json.Marshal(BuildJSON(fr, "test", OK))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"verdict":{"limit":"mixed"`, `"verdict":{"limit":"arrivals","text":"bottleneck: arrivals exceed capacity, 4 of 5 signals agree`,
		`"under":"batch_cap","replicas":3,"replicas_now":1,"gain":0.05,"flag":{"flag":"--max-num-seqs","from":"256","to":"269"`,
		`"ruled_out":["kv_cache","batch_cap"]`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("JSON lacks %s:\n%s", want, js)
		}
	}
}

// Pools the configuration names get their own assessment lines, in place
// of the model pools', and their objects in JSON.
func TestConfiguredPoolVerdictLines(t *testing.T) {
	now := time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)
	kv := diagnose.Verdict{Limit: diagnose.LimitKVCache, Signals: 1, Of: 2}
	fr := &diagnose.Frame{Time: now, Window: time.Minute, Interval: time.Second,
		Fleet: diagnose.FleetView{Stats: diagnose.UnknownStats(), Verdict: kv,
			Models: []diagnose.ModelView{{Model: "m1", Endpoints: 2, Stats: diagnose.UnknownStats(), Verdict: kv},
				{Model: "m2", Endpoints: 2, Stats: diagnose.UnknownStats(), Verdict: diagnose.Verdict{Limit: diagnose.LimitHealthy}}},
			Pools: []diagnose.PoolView{{Pool: "us-east", Endpoints: 2, Verdict: kv}, {Pool: "us-west", Endpoints: 2, Verdict: diagnose.Verdict{Limit: diagnose.LimitHealthy}}}}}
	var b strings.Builder
	if err := WriteTextRun(&b, fr, OK, Run{Window: time.Minute, Elapsed: time.Minute}); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{"  pool us-east  bottleneck: KV cache (1 of 2 endpoints)\n", "  pool us-west  bottleneck: no bottleneck: nothing waits, latency within target\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "pool m1") {
		t.Errorf("model pools listed beside the configured ones:\n%s", text)
	}
	js, err := json.Marshal(BuildJSON(fr, "test", OK))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"pools":[{"pool":"us-east","endpoints":2,"verdict":{"limit":"kv_cache"`; !strings.Contains(string(js), want) {
		t.Errorf("JSON lacks %s:\n%s", want, js)
	}
}

// Refused at the API server: the line and the JSON say the share and the
// status; the engine's admission rejections (no share) keep the plain
// name.
func TestRejectingVerdict(t *testing.T) {
	v := diagnose.Verdict{Limit: diagnose.LimitRejecting, Signals: 1, Of: 1, Refused: 0.31, Status: "400"}
	if got, want := VerdictLine(&v, false), "bottleneck: rejecting: 31% of inference requests answered 400 by the API server, before any engine saw them"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	js, err := json.Marshal(Verdict(&v, false))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"refused":0.31,"status":"400"`) {
		t.Errorf("JSON %s", js)
	}
	adm := diagnose.Verdict{Limit: diagnose.LimitRejecting, Signals: 1, Of: 1}
	if got := VerdictLine(&adm, false); got != "bottleneck: rejecting: requests refused before they run, 1 of 1 signals agree" {
		t.Errorf("admission line %q", got)
	}
	if js, _ := json.Marshal(Verdict(&adm, false)); strings.Contains(string(js), `"refused":`) {
		t.Errorf("admission JSON %s", js)
	}
}

// An endpoint's line names its engine as the screen does: "vLLM" before a
// vLLM release range only; another engine names itself ("SGLang", never
// "vLLM SGLang").
func TestEndpointEngineName(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	ep := func(name string, v sources.VersionRange) diagnose.EndpointView {
		return diagnose.EndpointView{Name: name, State: diagnose.StateUp, Kind: sources.KindEngine, Models: []string{"m"},
			LastSuccess: now, Stats: diagnose.UnknownStats(), Version: v}
	}
	fr := &diagnose.Frame{Time: now, Window: time.Minute, Interval: time.Second,
		Endpoints: []diagnose.EndpointView{ep("sg", sources.VersionRange{Server: sources.ServerSGLang}), ep("vl", sources.VersionRange{Server: sources.ServerVLLM})},
		Fleet:     diagnose.FleetView{Up: 2, Total: 2, Stats: diagnose.UnknownStats()}}
	var b strings.Builder
	if err := WriteTextRun(&b, fr, OK, Run{Window: time.Minute, Elapsed: time.Minute}); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if strings.Contains(text, "vLLM SGLang") || !strings.Contains(text, "\n  SGLang  model m") {
		t.Errorf("SGLang endpoint's line:\n%s", text)
	}
	if !strings.Contains(text, "\n  vLLM ") {
		t.Errorf("vLLM endpoint's line lost its engine name:\n%s", text)
	}
}

// A quiet pool with a member whose pace is over target does not say
// "latency within target".
func TestPoolVerdictSaysThePace(t *testing.T) {
	v := diagnose.Verdict{Limit: diagnose.LimitHealthy, Signals: 3, Of: 3, PaceOver: true}
	if s := VerdictLine(&v, true); strings.Contains(s, "latency within target") || !strings.Contains(s, "tokens stream slower than target on some members") {
		t.Error(s)
	}
}
