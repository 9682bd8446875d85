package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/ui/report"
)

// --once lists no findings on the frames it evaluates only for the rules'
// for durations (Detector.Advance): its report must be the report of a
// run that listed them on every frame, byte for byte, wherever it ends.
// The fleet fires, holds flags, groups symptoms under causes, resolves and
// loses a replica; the runs end before, at and after each.
func TestUnlistedEvaluationsChangeNoReport(t *testing.T) {
	const step = time.Second
	span := 7 * time.Minute
	epoch := time.Now().Add(-span).Truncate(step)
	fleet := sim.FleetConfig{Replicas: []sim.ReplicaConfig{
		{Name: "thrashing", Scenarios: []sim.ScenarioSpec{{Name: "kv-thrashing", Delay: 30 * time.Second}}},
		{Name: "backlog", Scenarios: []sim.ScenarioSpec{{Name: "queue-backlog", Delay: time.Minute}}},
		{Name: "crash", Scenarios: []sim.ScenarioSpec{{Name: "crash-loop", Delay: time.Minute}}},
		{Name: "leaving", Scenarios: []sim.ScenarioSpec{{Name: "prefill-starvation"}}},
		{Name: "prompts", Scenarios: []sim.ScenarioSpec{{Name: "long-prompts", Delay: 2 * time.Minute}}},
	}}
	h := simHistoryLeaving(t, fleet, epoch, span, step, map[string]time.Duration{"leaving": 5 * time.Minute})
	jsonOf := func(fr *diagnose.Frame) []byte {
		run := report.Run{Window: time.Minute, Elapsed: time.Minute}
		var b bytes.Buffer
		if err := report.WriteJSON(&b, report.BuildJSONRun(fr, "test", report.RunStatus(fr, run), run)); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	findings := 0
	for _, end := range []time.Duration{90 * time.Second, 3 * time.Minute, 5*time.Minute + 2*step, span} {
		cut := &history{batches: h.batches[:int(end/step)]}
		plain := runToEnd(t, replayPipeline(t, cut, step))
		p := replayPipeline(t, cut, step)
		p.ReadEveryEvaluation()
		every := runToEnd(t, p)
		if a, b := jsonOf(plain), jsonOf(every); !bytes.Equal(a, b) {
			t.Fatalf("ending at %v: the report differs when every evaluation lists its findings\nunlisted:\n%.3000s\nlisted:\n%.3000s", end, a, b)
		}
		findings += len(plain.Findings) + len(plain.Pending)
	}
	if findings == 0 {
		t.Fatal("no finding in any run: the comparison compares nothing")
	}
}
