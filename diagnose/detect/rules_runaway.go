package detect

import (
	"fmt"
	"math"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// An answer ends on the model's own stop token, or at a limit: the
// request's max_tokens (finish reason "length") or the engine's
// repetition check ("repetition", ≥0.18). When many more answers end at
// a limit and answers grow longer with them, the clients did not ask for
// more: the model stopped ending its answers (a chat template or
// tokenizer whose end-of-turn token the server no longer treats as a
// stop after an upgrade, a changed generation_config, a model that
// degenerates into repetition). Each such answer holds its batch slot and
// its KV blocks for max_tokens steps. The same share rising while
// answers grow shorter is the clients' limit lowered: traffic.

// runawayShift is the rise of the share of answers a limit ended that
// makes answers run away: open, its least change met, the output mean not
// fallen beside it, and no change of the prompts near it (longer
// documents ask for longer answers: kv-thrashing's 4k-token prompts with
// 1.5k-token answers under max_tokens 2048 cut 31 % of them); nil
// otherwise.
func runawayShift(ss []diagnose.Shift) *diagnose.Shift {
	var cut *diagnose.Shift
	for i := range ss {
		s := &ss[i]
		switch {
		case s.Signal == diagnose.SigGenLen && s.Ended.IsZero() && s.After < s.Before:
			return nil // shorter answers cut: the clients' max_tokens lowered
		case s.Signal == diagnose.SigCut && s.Ended.IsZero() && s.After > s.Before:
			cut = s
		}
	}
	if cut == nil || promptsMoved(ss, runawayOnset(ss, cut)) {
		return nil
	}
	return cut
}

// runawayLen is the rise of the output mean beside a runaway, nil when
// none was found (yet).
func runawayLen(ss []diagnose.Shift) *diagnose.Shift {
	for i := range ss {
		if s := &ss[i]; s.Signal == diagnose.SigGenLen && s.Ended.IsZero() && s.After > s.Before {
			return s
		}
	}
	return nil
}

// runawayOnset is when the runaway began: the output mean's rise is
// dated at the arrival of the requests that made it; the cut share at
// their end, a max_tokens' decode later.
func runawayOnset(ss []diagnose.Shift, cut *diagnose.Shift) time.Time {
	if l := runawayLen(ss); l != nil && l.Onset.Before(cut.Onset) {
		return l.Onset
	}
	return cut.Onset
}

// cutLevel is the share of answers ended by a limit that is said without
// a baseline (vtop opened after it began), over at least cutLevelMin
// finished requests in the window: chat traffic cuts a few in a hundred.
const (
	cutLevel    = 0.25
	cutLevelMin = 30
)

// cutShare is the window's share of finished requests a limit ended, and
// how many finished; NaN, 0 without finish reasons.
func cutShare(st *diagnose.Stats) (float64, float64) {
	share, perSec := 0.0, 0.0
	known := false
	for _, f := range st.Finish {
		known = true
		perSec += f.PerSec
		if f.Reason == sources.FinishLength || f.Reason == sources.FinishRepetition {
			share += f.Share
		}
	}
	if !known || bad(perSec) {
		return math.NaN(), 0
	}
	return share, perSec * st.Span.Seconds()
}

// cutSeen says a change of the cut share is on record: the baseline
// knows it (a rise that fell back, the clients' limit lowered).
func cutSeen(ss []diagnose.Shift) bool {
	for _, s := range ss {
		if s.Signal == diagnose.SigCut {
			return true
		}
	}
	return false
}

// runawayWait is how long after its signals were found a runaway is
// named: the prompt mean of the same finished requests is found later
// than their output mean where prompts are longer too (kv-thrashing's
// documents: 9 s later), and longer documents ask for longer answers.
const runawayWait = 20 * time.Second

// runawaySeen is when the newest of the runaway's signals was found.
func runawaySeen(ss []diagnose.Shift, cut *diagnose.Shift) time.Time {
	t := cut.Detected
	if l := runawayLen(ss); l != nil && l.Detected.After(t) {
		t = l.Detected
	}
	return t
}

// cutLow remembers that an endpoint's answers were seen ending on their
// own (under half cutLevel of them cut, over cutLevelMin finished): from
// then on a high share is a change the baseline judges, not a level
// vtop opened on.
type cutLow struct{ seen bool }

func (m *cutLow) observe(ep *diagnose.EndpointView, now time.Time) {
	if share, n := cutShare(&ep.Stats); n >= cutLevelMin && share < cutLevel/2 {
		m.seen = true
	}
}

var ruleRunawayAnswers = &Rule{
	ID: "runaway_answers", Title: "Answers run to their limit", Scope: ScopeEndpoint,
	memory:   func() ruleMemory { return &cutLow{} },
	Catches:  "Many more answers than before end at a limit (max_tokens, the repetition check) rather than on the model's own stop, and answers grow longer with them while the prompts hold: the model stopped ending its answers (a chat template, tokenizer or generation_config changed at a deploy; a model degenerating into repetition), or clients ask for longer answers than their max_tokens allows. Users get cut-off answers either way.",
	Needs:    "finished requests by finish reason (request_success_total, finished_reason), the generation-length histogram",
	Cond:     "the share of finished requests ended by length or repetition rose 15 points from its baseline and held 30 s (named 20 s after it and the output mean's rise were found), the output mean did not fall beside it (a fall with it is the clients' max_tokens lowered: a workload change), and no change of the prompt mean is open or began within a minute of it (longer documents ask for longer answers: a workload change); info when no such change is on record, a quarter or more of ≥ 30 finished requests in the window ended at a limit, and the endpoint was never seen with fewer than an eighth cut (opened after it began)",
	Clear:    "the share is back near its baseline, or has been the new level for 10 minutes",
	Severity: "warning; info when vtop opened after it began (a share of a quarter or more, no baseline to say it changed)",
	Action:   "read a few answers that ended with finish_reason=length: repeated or endless text is the model, a fault of the deployment (check what changed at the onset: model, chat template, tokenizer, generation_config, sampling defaults; a lower default max_tokens bounds the harm meanwhile); complete answers cut short are the clients asking for more than their max_tokens",
	For:      0, ResolveFor: 30 * time.Second,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		cut := runawayShift(u.ep.Shifts)
		if cut == nil {
			// Opened on it, no baseline to say it changed: a level
			// that chat traffic never reads is said, as info.
			if share, n := cutShare(u.st); n >= cutLevelMin && share >= cutLevel && !cutSeen(u.ep.Shifts) && !memoryOf[*cutLow](u).seen {
				return condMet, diagnose.SevInfo
			}
			return condClear, 0
		}
		if x.now.Sub(runawaySeen(u.ep.Shifts, cut)) < runawayWait {
			return condClear, 0
		}
		x.since = runawayOnset(u.ep.Shifts, cut)
		return condMet, diagnose.SevWarning
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		ss := u.ep.Shifts
		cut := runawayShift(ss)
		if share, n := cutShare(u.st); cut == nil && n >= cutLevelMin && share >= cutLevel && !memoryOf[*cutLow](u).seen {
			fd.Summary = say("%s of answers end at a limit (max_tokens, or the repetition check), not on the model's own stop: no baseline says since when", pct(share))
			fd.Evidence = []diagnose.Evidence{evNum("answers cut off", share, diagnose.UnitRatio, u.st.Span), evNum("finished", n, diagnose.UnitCount, u.st.Span)}
			fd.Explain = plain("Chat answers end on the model's own stop token almost always. When a large share ends at the request's max_tokens, either the clients ask for more than their max_tokens allows, or the model no longer ends its answers (a chat template or tokenizer change after a deploy). vtop was opened after it began, so it cannot say whether it changed.")
			fd.Action = plain("read a few answers that ended with finish_reason=length: repeated or endless text is the model (check the last deploy: model, chat template, tokenizer, generation_config); complete answers cut short are the clients' max_tokens")
			return
		}
		if cut == nil {
			fd.Summary = plain("answers end on the model's own stop again")
			return
		}
		on := runawayOnset(ss, cut)
		fd.Summary = say("since %s %s of answers end at a limit (%s before)", clock(on), pct(cut.After), pct(cut.Before))
		fd.Evidence = []diagnose.Evidence{evNum("answers cut off", cut.After, diagnose.UnitRatio, 0), evNum("before", cut.Before, diagnose.UnitRatio, 0)}
		if l := runawayLen(ss); l != nil {
			fd.Summary = fd.Summary.Add(", %s", l.Words())
			fd.Evidence = append(fd.Evidence, evNum("output mean", l.After, diagnose.UnitTokens, 0), evNum("output mean before", l.Before, diagnose.UnitTokens, 0))
		}
		fd.Summary = fd.Summary.Cat(plain("; prompts as before"))
		fd.Explain = plain("An answer ends on the model's own stop token or at a limit: the request's max_tokens, or the engine's repetition check. Many more ending at the limit while answers grow longer and the prompts stay as they were is the model no longer ending its answers (after a deploy: a chat template or tokenizer whose end-of-turn token is not a stop, a changed generation_config), or clients asking for longer answers than their max_tokens allows; either way users get cut-off answers. A runaway answer runs on to max_tokens, holding its batch slot and its KV blocks for every step.")
		fd.Action = say("read a few answers that ended with finish_reason=length: repeated or endless text is the model, a fault of the deployment (check what changed at %s: model, chat template, tokenizer, generation_config, sampling defaults; until fixed, a lower default max_tokens bounds what each holds); complete answers cut short are the clients asking for more than their max_tokens (raise it, or ask for shorter answers)", clock(on))
	},
	prom: func(g *promGen, p []float64) []promAlert {
		cut := g.labeledRate(sources.LFinished, sources.FinishLength, byEndpoint)
		all := g.labeledRate(sources.LFinished, "", byEndpoint)
		before := fmt.Sprintf("(%s) / (%s)", g.labeledRateAt(sources.LFinished, sources.FinishLength, byEndpoint, time.Hour), g.labeledRateAt(sources.LFinished, "", byEndpoint, time.Hour))
		return []promAlert{{Severity: "warning", Expr: fmt.Sprintf("(%s) / (%s) >= %s + 0.15", cut, all, before)}}
	},
}

// promptsMoved says a change of the prompt mean is open, or began within
// a minute of at: other requests (documents) ask for other answers. The
// arrival rate is not read: more requests of the same kind do not end
// answers at their limit (and a burst on a thrashing 14B, ×2 for a
// while, then forgotten, hid a runaway for its while).
func promptsMoved(ss []diagnose.Shift, at time.Time) bool {
	for _, s := range ss {
		if s.Signal == diagnose.SigPromptLen && (s.Ended.IsZero() || s.Onset.Sub(at).Abs() < time.Minute) {
			return true
		}
	}
	return false
}
