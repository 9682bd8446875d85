package detect

import (
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// refusingStats is a healthy engine whose API server answers share of 3
// inference requests/s with status (over a minute: 180 responses).
func refusingStats(share float64, status string) diagnose.Stats {
	st := healthyStats()
	st.HTTPRate, st.HTTP4xxShare = 3, share
	ok := "2xx"
	if status != "4xx" {
		ok = "200"
	}
	st.HTTPStatus = []diagnose.FinishShare{{Reason: ok, PerSec: 3 * (1 - share), Share: 1 - share}, {Reason: status, PerSec: 3 * share, Share: share}}
	if share > 0.5 {
		st.HTTPStatus[0], st.HTTPStatus[1] = st.HTTPStatus[1], st.HTTPStatus[0]
	}
	st.PromptLenTop, st.PromptOverTop = 20000, 0 // chat-sized prompts: none near --max-model-len
	return st
}

// long makes the prompts that got through long for the server's context:
// 39 % above 5,000 tokens, the last bucket of an 8,192-token layout.
func long(st *diagnose.Stats) {
	st.PromptLenTop, st.PromptOverTop, st.AvgPromptLen = 5000, 0.39, 4450
}

// The verdict and the http_rejections finding: named from a material
// share, quiet under it or on too few responses, and the advice follows
// the evidence: --max-model-len (with the range the prompt buckets
// bound it to) only where the prompts are long, a 429 as a rate limit.
func TestHTTPRejections(t *testing.T) {
	cases := []struct {
		name         string
		st           func() diagnose.Stats
		rejecting    bool
		sev          diagnose.Severity
		advise, shun string
	}{
		{"400 with long prompts", func() diagnose.Stats { s := refusingStats(0.33, "400"); long(&s); return s }, true, diagnose.SevCritical,
			"over --max-model-len (5,000–9,999)", ""},
		{"grouped 4xx with long prompts", func() diagnose.Stats { s := refusingStats(0.33, "4xx"); long(&s); return s }, true, diagnose.SevCritical,
			"over --max-model-len (5,000–9,999)", ""},
		{"400 on chat-sized prompts", func() diagnose.Stats { return refusingStats(0.33, "400") }, true, diagnose.SevCritical,
			"read the 400 responses' message", "--max-model-len"},
		{"429 with long prompts", func() diagnose.Stats { s := refusingStats(0.1, "429"); long(&s); return s }, true, diagnose.SevWarning,
			"raise that rate limit", "--max-model-len"},
		{"404", func() diagnose.Stats { return refusingStats(0.1, "404") }, true, diagnose.SevWarning, "--served-model-name", "--max-model-len"},
		{"occasional 400s", func() diagnose.Stats { return refusingStats(0.015, "400") }, false, 0, "", ""},
		{"a burst of refusals too few to count", func() diagnose.Stats {
			s := refusingStats(0.5, "400")
			s.HTTPRate, s.Span = 0.3, 20*time.Second
			return s
		}, false, 0, "", ""},
		{"not counted", func() diagnose.Stats {
			s := refusingStats(0.33, "400")
			s.HTTPRate, s.HTTP4xxShare, s.HTTPStatus = nan, nan, nil
			return s
		}, false, 0, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ep := upEndpoint("replica-3", c.st())
			ep.Subs[0].Stats = ep.Stats
			w := newWorld(t, isolated(RulesConfig{SLO: diagnose.SLOProfiles()[0]}, "http_rejections"), ep)
			frames := w.run(t0, 2*ruleHTTPRejections.For+10*time.Second, time.Second, nil)
			last := frames[len(frames)-1]
			v := &last.Endpoints[0].Verdict
			if (v.Limit == diagnose.LimitRejecting) != c.rejecting {
				t.Fatalf("verdict %s (refused %v, %s)", v.Limit, v.Refused, v.Status)
			}
			_, fd := firstFiring(frames, "http_rejections")
			if !c.rejecting {
				if fd != nil {
					t.Fatalf("fired: %s", txt(fd.Summary))
				}
				return
			}
			if fd == nil {
				t.Fatal("http_rejections did not fire")
			}
			st := c.st()
			if v.Refused != st.HTTP4xxShare || v.Status != st.HTTPStatus[len(st.HTTPStatus)-1].Reason && v.Status != st.HTTPStatus[0].Reason {
				t.Errorf("verdict refused %v %q", v.Refused, v.Status)
			}
			action := txt(fd.Action)
			if fd.Severity != c.sev || !strings.Contains(action, c.advise) || c.shun != "" && strings.Contains(action, c.shun) {
				t.Errorf("%s: %s → %s; want %s, %q in the advice and %q not", fd.Severity, txt(fd.Summary), action, c.sev, c.advise, c.shun)
			}
		})
	}
}

// Refusals outrank a burst the engine drained: the engine's own counters
// never see the refused requests, so its queue reads as a burst.
func TestRejectingOutranksDrainedBurst(t *testing.T) {
	st := refusingStats(0.33, "400")
	long(&st)
	ep := upEndpoint("replica-3", st)
	ep.Subs[0].Stats = ep.Stats
	w := newWorld(t, RulesConfig{SLO: diagnose.SLOProfiles()[0]}, ep)
	frames := w.run(t0, 40*time.Second, time.Second, func(now time.Time, w *world) {
		// A queue that stands 5 s of every 20 and drains.
		w.eps[0].Stats.Waiting = 0
		if now.Sub(t0)%(20*time.Second) < 5*time.Second {
			w.eps[0].Stats.Waiting = 6
		}
	})
	if v := frames[len(frames)-1].Endpoints[0].Verdict; v.Limit != diagnose.LimitRejecting {
		t.Errorf("verdict %s, want rejecting", v.Limit)
	}
	// Without the refusals the same queue is a drained burst.
	st.HTTPRate, st.HTTP4xxShare, st.HTTPStatus = nan, nan, nil
	ep = upEndpoint("replica-3", st)
	ep.Subs[0].Stats = ep.Stats
	w = newWorld(t, RulesConfig{SLO: diagnose.SLOProfiles()[0]}, ep)
	frames = w.run(t0, 40*time.Second, time.Second, func(now time.Time, w *world) {
		w.eps[0].Stats.Waiting = 0
		if now.Sub(t0)%(20*time.Second) < 5*time.Second {
			w.eps[0].Stats.Waiting = 6
		}
	})
	if v := frames[len(frames)-1].Endpoints[0].Verdict; v.Limit == diagnose.LimitRejecting {
		t.Errorf("verdict %s without refusals", v.Limit)
	}
}

// A breach of the tail alone says the p99 and twice the target, not a
// p95 under the target "above" it.
func TestSLOBreachTailWords(t *testing.T) {
	st := healthyStats()
	st.TTFT = qs(0.12, 0.4, 1.2, 300)
	ep := upEndpoint("replica-3", st)
	ep.Subs[0].Stats = ep.Stats
	w := newWorld(t, isolated(RulesConfig{SLO: diagnose.SLOProfiles()[0]}, "slo_breach"), ep)
	_, fd := firstFiring(w.run(t0, 2*ruleSLOBreach.For+10*time.Second, time.Second, nil), "slo_breach")
	if fd == nil {
		t.Fatal("slo_breach did not fire on a TTFT p99 of 1.2 s")
	}
	if s := txt(fd.Summary); !strings.Contains(s, "TTFT p99 1.2s > 1s") || strings.Contains(s, "p95") {
		t.Errorf("summary %q", s)
	}
}

// The refusal's evidence lists each 4xx status only where there are
// several: with one, its rate is the refused rate under another name.
func TestRefusalEvidenceStatuses(t *testing.T) {
	names := func(st diagnose.Stats) []string {
		r, ok := refusalOf(&st)
		if !ok {
			t.Fatal("no refusal read")
		}
		var out []string
		for _, e := range refusalEvidence(&st, &r) {
			out = append(out, e.Name)
		}
		return out
	}
	one := names(refusingStats(0.3, "400"))
	if strings.Contains(strings.Join(one, ","), "answered 400") {
		t.Errorf("one status repeated as its own line: %v", one)
	}
	st := refusingStats(0.3, "400")
	st.HTTPStatus = append(st.HTTPStatus, diagnose.FinishShare{Reason: "404", PerSec: 0.3, Share: 0.1})
	two := strings.Join(names(st), ",")
	if !strings.Contains(two, "answered 400") || !strings.Contains(two, "answered 404") {
		t.Errorf("two statuses not listed each: %v", two)
	}
}
