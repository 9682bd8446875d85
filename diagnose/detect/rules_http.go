package detect

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// Requests refused at the API server. vLLM's OpenAI server validates a
// request before it hands it to an engine: a prompt whose tokens plus
// max_tokens exceed --max-model-len, an unknown model, a malformed body
// are answered 4xx at once, and no engine counter sees them (no queue,
// no finish reason). Only the server's http_requests_total counts them.
const (
	// refusedShare is the 4xx share of inference responses from which
	// the server refuses work that matters: a few 404s on a mistyped
	// model name, an occasional bad request (under 2 %) is not an
	// incident of this server.
	refusedShare = 0.05
	// longPrompts is the share of the prompts the engine finished that
	// lie above the prompt-length layout's last finite bound (vLLM ends
	// it at the largest 1-2-5 value ≤ --max-model-len, so that bound is
	// at least 40 % of it): prompts that long make the refused ones
	// likely to be over it. A chat workload has none there.
	longPrompts = 0.10
)

// refusal is what the API server's responses say over the window: the
// share answered 4xx, the most frequent 4xx status, and how many
// responses there were to judge by.
type refusal struct {
	share, rate   float64 // 4xx share of inference responses, 4xx/s
	status        string  // the most frequent 4xx status: "4xx" (grouped), "400", "429"
	answered, obs float64 // responses/s, responses in the window
}

func refusalOf(st *diagnose.Stats) (refusal, bool) {
	r := refusal{share: st.HTTP4xxShare, answered: st.HTTPRate}
	if bad(st.HTTPRate) || bad(st.HTTP4xxShare) {
		return r, false
	}
	r.obs = st.HTTPRate * st.Span.Seconds()
	r.rate = st.HTTP4xxShare * st.HTTPRate
	for _, s := range st.HTTPStatus { // most frequent first
		if strings.HasPrefix(s.Reason, "4") {
			r.status = s.Reason
			break
		}
	}
	return r, true
}

// refusing reports a material, sustained 4xx share: enough responses in
// the window to count (minObs), refusals among them that are not one or
// two (5), and the share at refusedShare or above.
func (r *refusal) refusing() bool { return r.material(refusedShare) }

func (r *refusal) material(share float64) bool {
	return r.obs >= minObs && r.share*r.obs >= 5 && r.share >= share
}

// rejectingVerdict names the limit "rejecting" for requests the API
// server refuses, with the share and the status.
func rejectingVerdict(st *diagnose.Stats, r *refusal) diagnose.Verdict {
	return diagnose.Verdict{Limit: diagnose.LimitRejecting, Signals: 1, Of: 1, Refused: r.share, Status: r.status, Evidence: refusalEvidence(st, r)}
}

func refusalEvidence(st *diagnose.Stats, r *refusal) []diagnose.Evidence {
	w := st.Span
	out := []diagnose.Evidence{evNum("answered 4xx", r.share, diagnose.UnitRatio, w), evNum("refused", r.rate, diagnose.UnitReqPerSec, w),
		evNum("answered", r.answered, diagnose.UnitReqPerSec, w)}
	// Each 4xx status by itself only where there are several: one status
	// would repeat the refused rate under another name.
	var each []diagnose.Evidence
	for _, s := range st.HTTPStatus {
		if strings.HasPrefix(s.Reason, "4") {
			each = append(each, evNum("answered "+s.Reason, s.PerSec, diagnose.UnitReqPerSec, w))
		}
	}
	if len(each) > 1 {
		out = append(out, each...)
	}
	if !bad(st.PromptOverTop) {
		out = append(out, evNum("last prompt bucket", st.PromptLenTop, diagnose.UnitTokens, 0),
			evNum("finished prompts above it", st.PromptOverTop, diagnose.UnitRatio, w),
			evNum("mean finished prompt", st.AvgPromptLen, diagnose.UnitTokens, w))
	}
	return out
}

// next125 is the 1-2-5 value after v (vLLM's build_1_2_5_buckets): 5000 →
// 10000, 2000 → 5000, 1000 → 2000.
func next125(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	switch m := math.Round(v / p); {
	case m < 2:
		return 2 * p
	case m < 5:
		return 5 * p
	}
	return 10 * p
}

// refusalAdvice is what to do about the refusals, from what the evidence
// shows and nothing else: a 429 is a rate limit, not prompt length; a 400
// (or grouped 4xx) names --max-model-len only where the prompts that got
// through are long for the context the server allows.
func refusalAdvice(st *diagnose.Stats, r *refusal) (explain, action diagnose.Text) {
	long := !bad(st.PromptOverTop) && st.PromptOverTop >= longPrompts && !bad(st.PromptLenTop)
	switch {
	case r.status == "429":
		// vLLM's own server answers no 429: a middleware or wrapper in its
		// process does (a proxy in front counts its 429s in its own
		// metrics, not here).
		return plain("429 Too Many Requests: a rate limit in the API server's process (vLLM answers none itself: a --middleware or a wrapper around the server adds it) refuses requests before they are queued. The engine never sees them; its queue and latency look healthy."),
			plain("raise that rate limit, or add replicas behind it if the limit matches what one replica serves; prompt length is not the cause")
	case long && (r.status == "400" || r.status == "4xx" || r.status == "413"):
		lo, hi := st.PromptLenTop, next125(st.PromptLenTop)-1
		explain = say("vLLM answers 400 to a request whose prompt tokens plus max_tokens exceed --max-model-len, before any engine sees it. The prompts that got through are long for this server's context: %s of them above %s tokens, where vLLM ends the prompt-length buckets at the largest 1-2-5 value ≤ --max-model-len, which so lies between %s and %s.",
			pct(st.PromptOverTop), grouped(lo), grouped(lo), grouped(hi))
		if !bad(st.KVCapacityTokens) {
			return explain, say("the refused prompts are most likely over --max-model-len (%s–%s): clients must trim prompt + max_tokens to it, or raise --max-model-len if the model's context allows (the KV cache holds %s tokens; vLLM does not start with a --max-model-len above that); the 400s' message in the API server's log names the lengths",
				grouped(lo), grouped(hi), grouped(st.KVCapacityTokens))
		}
		return explain, say("the refused prompts are most likely over --max-model-len (%s–%s): clients must trim prompt + max_tokens to it, or raise --max-model-len if the model's context and the KV cache allow; the 400s' message in the API server's log names the lengths",
			grouped(lo), grouped(hi))
	case r.status == "404":
		return plain("404: the model or route the clients ask for does not exist on this server (a model name, a LoRA adapter not loaded)."),
			plain("compare the clients' model name with the server's --served-model-name (and loaded adapters)")
	case r.status == "401" || r.status == "403":
		return plain("the API server refuses the clients' credentials (--api-key)."), plain("check the key the clients send against the server's --api-key")
	}
	return say("The API server refuses requests with %s before any engine sees them; the prompts that got through are not long for its context, so --max-model-len is not shown to be the cause.", r.status),
		say("read the %s responses' message in the API server's log (a bad parameter, an unknown model, a schema error) and fix the client that sends them", r.status)
}

// http_rejections parameters.
var (
	hrParams = params{
		{"share", refusedShare, "ratio", "4xx share of inference responses that counts"},
		{"critical", 0.20, "ratio", "4xx share that makes it critical"},
		{"clear", 0.02, "ratio", "4xx share below which it clears"},
	}
	hrShare    = hrParams.index("share")
	hrCritical = hrParams.index("critical")
	hrClear    = hrParams.index("clear")
)

var ruleHTTPRejections = &Rule{
	ID: "http_rejections", Title: "Requests refused at the API server", Scope: ScopeEndpoint,
	Catches:  "The API server answers inference requests 4xx before any engine sees them (a prompt plus max_tokens over --max-model-len is a 400, a rate limit a 429): no engine counter shows them, the engine looks healthy while clients fail.",
	Needs:    "http_requests_total by handler and status (vLLM's API server 0.8.3+, single-process registry; grouped 4xx or codes); silent where not exposed",
	Cond:     "4xx ≥ {share} of the inference handlers' responses over the window, with 20 responses and 5 refused in it",
	Clear:    "4xx < {clear} of the responses",
	Severity: "warning; critical from {critical}",
	Action:   "429: raise the rate limit or add capacity behind it; 400 with long prompts: clients trim prompt + max_tokens to --max-model-len, or raise it where the model and the KV cache allow; otherwise read the responses' message",
	For:      30 * time.Second, ResolveFor: 2 * time.Minute,
	Params: hrParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		r, ok := refusalOf(u.st)
		switch {
		case !ok:
			return condUnknown, 0
		case r.share < p[hrClear]:
			return condClear, 0
		case r.material(p[hrShare]):
			x.over = r.share / p[hrShare]
			if r.share >= p[hrCritical] {
				return condMet, diagnose.SevCritical
			}
			return condMet, diagnose.SevWarning
		}
		return condHold, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		st := u.st
		r, _ := refusalOf(st)
		fd.Summary = say("%s of inference requests answered %s at the API server (%s of %s req/s), before any engine saw them", pct(r.share), r.status, num(r.rate), num(r.answered))
		fd.Evidence = refusalEvidence(st, &r)
		fd.Explain, fd.Action = refusalAdvice(st, &r)
	},
	prom: func(g *promGen, p []float64) []promAlert {
		name := sources.FamilyName(sources.RoleHTTP, 0) + "_total"
		handlers := make([]string, len(sources.InferenceHandlers))
		for i, h := range sources.InferenceHandlers {
			handlers[i] = regexp.QuoteMeta(h)
		}
		sel := fmt.Sprintf(`handler=~"%s"`, strings.Join(handlers, "|"))
		bad := fmt.Sprintf(`sum by (job, instance) (rate(%s{%s,status=~"4.."}[%s]))`, name, sel, g.w)
		all := fmt.Sprintf(`sum by (job, instance) (rate(%s{%s}[%s]))`, name, sel, g.w)
		// 20 responses and 5 refused in the window, on vLLM's targets
		// only: any FastAPI app counts its requests so.
		enough := fmt.Sprintf("%s * %s >= 5 and %s * %s >= %s and on (job, instance) %s", bad, g.num(g.rangeSeconds()), all, g.num(g.rangeSeconds()), g.num(minObs), g.servedVLLM())
		return []promAlert{
			{Severity: "warning", Expr: fmt.Sprintf("(%s) / (%s) >= %s and %s", bad, all, g.num(p[hrShare]), enough)},
			{Severity: "critical", Expr: fmt.Sprintf("(%s) / (%s) >= %s and %s", bad, all, g.num(p[hrCritical]), enough)},
		}
	},
}
