package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/app"
	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/ui/format"
)

// TestE2EBrokenFleetVerdicts is issue 18's "the right binding limit named
// within 30 s of opening on an already-broken replica", end to end: one
// `vtop sim` fleet with a replica per pathology of the verdict table
// (diagnose/detect's TestVerdictScenarios) and healthy ones, broken three
// minutes before the built binary opens on it in a terminal (TUI, 1 s
// polls, the sim's GPUs through its dcgm-exporter endpoint), recording.
// The recording is then replayed tick by tick (the same detector at the
// live run's instants): each broken replica's verdict is its limit within
// 30 s of opening and keeps it for the next 60 s; the healthy ones raise no
// warning or critical and name no limit.
func TestE2EBrokenFleetVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built binary for 95 s")
	}
	cases := []struct {
		scenario string
		want     diagnose.Limit // "" for the healthy ones
	}{
		{"lora-slots", diagnose.LimitLoRASlots},
		{"prefill-starvation", diagnose.LimitBatchCap},
		{"queue-backlog", diagnose.LimitArrivals},
		{"kv-thrashing", diagnose.LimitKVCache},
		{"prompt-shift", diagnose.LimitTokenBudget},
		{"spec-decode-low-accept", diagnose.LimitSpecDecode},
		{"closed-loop-backlog", diagnose.LimitCompute},
		{"kv-transfer-failing", diagnose.LimitKVTransfer},
		{"engine-stalled", diagnose.LimitStalled},
		// Refused by the API server before any engine sees them: only
		// http_requests_total counts them.
		{"prompt-over-max-model-len", diagnose.LimitRejecting},
		{"bad-parameter", diagnose.LimitRejecting},
		{"stray-bad-requests", ""},
		{"healthy", ""},
		{"healthy", ""},
	}
	bin := vtopBinary(t)
	args := []string{"--replicas", fmt.Sprint(len(cases)), "--warmup", "3m"}
	for _, c := range cases {
		args = append(args, "--scenario", c.scenario)
	}
	hosts, dcgm := simFleetDCGM(t, bin, args...)
	if len(hosts) != len(cases) {
		t.Fatalf("%d replicas served, want %d: %v", len(hosts), len(cases), hosts)
	}
	const watch = 95 * time.Second // 30 s to name it, 60 s to keep it, 5 s of slack
	tm := newTerm(t, 160, 48)
	rec := filepath.Join(tm.dir, "fleet.vtrec")
	tm.start(bin, append([]string{"--interval", "1s", "--gpu", "none", "--dcgm", dcgm, "--record", rec, "--log", filepath.Join(tm.dir, "vtop.log")}, hosts...)...)
	tm.waitFor(15*time.Second, fmt.Sprintf("%d/%d up", len(cases), len(cases)))
	time.Sleep(watch)
	tm.keys("q")
	tm.assertRestored("0")
	if t.Failed() {
		log, _ := os.ReadFile(filepath.Join(tm.dir, "vtop.log"))
		t.Fatalf("vtop did not quit cleanly; its log:\n%s", log)
	}

	p, err := app.OpenPlayer([]string{rec}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	opened := p.Header().Started
	type seen struct {
		first    time.Duration // when the wanted limit was first named (-1: never)
		lost     string        // the first verdict other than it afterwards
		said     []string      // the verdicts in order, each with when it began
		last     diagnose.Limit
		severity string // healthy: the first warning or critical finding
	}
	got := make([]seen, len(cases))
	for i := range got {
		got[i].first = -1
	}
	var end time.Duration
	for p.Next() {
		fr := p.Frame()
		at := fr.Time.Sub(opened)
		end = at
		for i := range fr.Endpoints {
			ep := &fr.Endpoints[i]
			k := ep.Index // static targets keep their order
			if k < 0 || k >= len(hosts) || !strings.Contains(ep.Name, hosts[k]) {
				t.Fatalf("endpoint %q is none of the fleet's %v", ep.Name, hosts)
			}
			g, c := &got[k], cases[k]
			if l := ep.Verdict.Limit; l != g.last || len(g.said) == 0 {
				g.said = append(g.said, fmt.Sprintf("%s@%v", l, at.Round(time.Second)))
				g.last = l
			}
			if c.want == "" {
				for _, fd := range ep.Findings {
					if fd.Severity > diagnose.SevInfo && g.severity == "" {
						g.severity = fmt.Sprintf("%s %s at %v: %s", fd.Severity, fd.Rule, at.Round(time.Second), format.Say(fd.Summary))
					}
				}
				if ep.Verdict.Limit.Symptom() && g.lost == "" {
					g.lost = fmt.Sprintf("%s at %v", ep.Verdict.Limit, at.Round(time.Second))
				}
				continue
			}
			switch {
			case g.first < 0 && ep.Verdict.Limit == c.want:
				g.first = at
			case g.first >= 0 && at <= g.first+60*time.Second && ep.Verdict.Limit != c.want && g.lost == "":
				g.lost = fmt.Sprintf("%s at %v", ep.Verdict.Limit, at.Round(time.Second))
			}
		}
	}
	if err := p.Stopped(); err != nil {
		t.Fatalf("the recording: %v", err)
	}
	if end < watch-5*time.Second {
		t.Fatalf("the recording spans %v of the %v watched", end, watch)
	}
	for i, c := range cases {
		g := &got[i]
		t.Logf("%-24s %-14s first %v; verdicts %s", c.scenario, c.want, g.first.Round(time.Second), strings.Join(g.said, " "))
		switch {
		case c.want == "" && (g.severity != "" || g.lost != ""):
			t.Errorf("%s (%s): not quiet: %s%s", c.scenario, hosts[i], g.severity, g.lost)
		case c.want == "":
		case g.first < 0 || g.first > 30*time.Second:
			t.Errorf("%s (%s): %s not named within 30 s of opening: %s", c.scenario, hosts[i], c.want, strings.Join(g.said, " "))
		case g.lost != "":
			t.Errorf("%s (%s): %s named at %v, then lost within 60 s: %s", c.scenario, hosts[i], c.want, g.first.Round(time.Second), g.lost)
		case end < g.first+60*time.Second:
			t.Errorf("%s (%s): named at %v, but the run ends at %v, before 60 s of keeping it", c.scenario, hosts[i], g.first.Round(time.Second), end)
		}
	}
}
