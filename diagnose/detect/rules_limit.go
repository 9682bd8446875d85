package detect

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// The binding limit as findings: the limits no older rule names (adapter
// slots, the token budget, speculative decoding), and a symptom no
// limit explains. The batch cap, the KV cache, a stalled or rejecting or
// sleeping engine, and arrivals beyond capacity keep their own rules, which
// read the same verdict (see classify).

// limitWords are a limit's finding title and the mechanism in a sentence.
var limitWords = map[diagnose.Limit][2]string{
	diagnose.LimitLoRASlots:   {"LoRA adapter slots bind", "vLLM runs requests of at most --max-loras adapters at a time (per batch); a request whose adapter is not loaded waits for a slot even when the batch and the KV cache have room."},
	diagnose.LimitTokenBudget: {"Token budget binds", "Each engine step carries at most --max-num-batched-tokens tokens; long prompts fill every step to that ceiling, so prefills take several steps and waiting prompts are admitted slowly although the batch and the KV cache have room."},
	diagnose.LimitKVTransfer:  {"KV transfer binds", "With prefill/decode disaggregation the decode instance reads each prompt's KV from its prefill instance over NIXL; a read that fails, or whose KV the prefill instance freed before it was read (expired), is recomputed on the decode instance after the transfer gives up, or the request is lost: those requests' first token waits for the timeout and a local prefill, and the prefills lengthen every decode step. No flag of this engine moves the limit: the path between the instances does."},
	diagnose.LimitSpecDecode:  {"Speculative decoding costs more than it saves", "Each step drafts tokens and verifies them with the target model; when few drafts are accepted, the drafting and the longer verification cost more per step than the accepted tokens save, so decoding is slower than without drafts."},
}

var ruleBindingLimit = &Rule{
	ID: "binding_limit", Title: "Binding limit", Scope: ScopeEndpoint,
	Catches:  "Requests wait or latency is over target and the limit that holds them back is one no older rule names: LoRA adapter slots (--max-loras), the token budget (--max-num-batched-tokens), speculative decoding that accepts too few drafts, KV transfers of P/D disaggregation that fail or expire, or compute.",
	Needs:    "lora_requests_info (adapter slots), num_requests_waiting_by_reason (≥0.20), iteration_tokens_total (≥0.6.4), spec_decode counters (with a speculative config), nixl_num_failed_transfers (≥0.11.1) and nixl_num_kv_expired_reqs (≥0.15) with NixlConnector",
	Cond:     "requests waiting or latency over target, the queue not a burst that drains, and the evidence names one of those limits (see the verdict line: each limit's test is its mechanism's)",
	Clear:    "no symptom, or another limit binds",
	Severity: "warning",
	Action:   "the flag of the binding limit only: raise --max-loras (adapter slots), raise --max-num-batched-tokens (token budget), lower num_speculative_tokens or drop the speculative config (drafts); KV transfer: no flag, the transfer path (UCX transport, the NIXL side channel) and, for expired KV, the prefill instances' VLLM_NIXL_ABORT_REQUEST_TIMEOUT",
	For:      time.Minute, ResolveFor: 2 * time.Minute,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		switch l := u.ep.Verdict.Limit; {
		case l == diagnose.LimitFewData || l == diagnose.LimitNone:
			return condUnknown, 0
		case limitWords[l][0] != "":
			x.over = float64(u.ep.Verdict.Signals) // each agreeing signal shortens the hold
			return condMet, diagnose.SevWarning
		}
		return condClear, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		v := &u.ep.Verdict
		words := limitWords[v.Limit]
		fd.Title = words[0]
		fd.Evidence = v.Evidence
		fd.Summary = say("%s: %d of %d signals agree", words[0], v.Signals, v.Of)
		fd.Explain = plain(words[1])
		switch {
		case v.Flag != nil:
			fd.Flags = []diagnose.FlagChange{*v.Flag}
			from := v.Flag.From
			if from.IsZero() {
				from = diagnose.Str("(current value unknown)")
			}
			fd.Action = say("%s %s → %s (%s)", v.Flag.Flag, from, v.Flag.To, v.Flag.Why)
		case v.Limit == diagnose.LimitKVTransfer:
			fd.Action = plain("fix the KV path from the prefill instances, not this engine's flags: check the NIXL transport (UCX_TLS and UCX_NET_DEVICES name the RDMA devices the reads use; the UCX and NIXL logs of both sides name the failing peer) and that VLLM_NIXL_SIDE_CHANNEL_HOST/PORT are reachable from here")
			if !bad(u.st.KVExpiredRate) && u.st.KVExpiredRate > 0 {
				fd.Action = fd.Action.Cat(plain("; KV expires: the prefill instances free it before this instance reads it, so raise VLLM_NIXL_ABORT_REQUEST_TIMEOUT there or send this instance fewer requests"))
			}
		}
	},
	prom: func(g *promGen, p []float64) []promAlert {
		lora := fmt.Sprintf(`count by (%s) (%s{%s!=""}) > 0`, "job, instance", sources.FamilyName(sources.RoleLoraInfo, 0), sources.LabelWaitLora)
		spec := fmt.Sprintf("(%s) / (%s) < %s", g.rate(sources.CSpecAccepted, "job, instance"), g.rate(sources.CSpecDraftTokens, "job, instance"), g.num(draftCost))
		xfer := fmt.Sprintf("(%s) / (%s) >= %s", g.rate(sources.CKVTransferFailed, "job, instance"), g.labeledRate(sources.LFinished, "", "job, instance"), g.num(xferLossShare))
		return []promAlert{{Severity: "warning", Expr: lora + " or " + spec + " or " + xfer}}
	},
}

var ruleUnexplained = &Rule{
	ID: "unexplained_symptom", Title: "Symptom without a binding limit", Scope: ScopeEndpoint,
	Catches:    "Requests wait or latency is over target, the queue is not a burst that drains, and no limit of the engine binds on the evidence: shown as unexplained, with what was checked and ruled out, never with a guessed cause.",
	Needs:      "what the limits read (see binding_limit, prefill_starvation, kv_cache_saturated)",
	Cond:       "a symptom (requests waiting, or TTFT p95 / inter-token p50 over the SLO target over enough observations) for which every limit's test fails",
	Clear:      "no symptom, or a limit binds",
	Severity:   "info: it names no cause, so it sets no alarm of its own (the SLO breach it explains does)",
	Action:     "generic: compare with a healthy replica of the same model (its traffic mix, prompt lengths, version), and look outside vLLM (the client, the network, the node)",
	NoPromQL:   "its condition is the failure of every other limit's test, which only the detector evaluates",
	For:        time.Minute,
	ResolveFor: time.Minute,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		switch u.ep.Verdict.Limit {
		case diagnose.LimitUnexplained:
			return condMet, diagnose.SevInfo
		case diagnose.LimitFewData, diagnose.LimitNone:
			return condUnknown, 0
		}
		return condClear, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		v := &u.ep.Verdict
		ruled := make([]string, len(v.Ruled))
		for i, l := range v.Ruled {
			ruled[i] = string(l)
		}
		// Sized once: described every second on every endpoint it holds on.
		out := strings.Join(ruled, ", ")
		fd.Evidence = append(make([]diagnose.Evidence, 0, len(v.Evidence)+1), v.Evidence...)
		fd.Evidence = append(fd.Evidence, ev("ruled out", out, u.st.Span))
		fd.Summary = plain("no limit binds on the evidence; checked and ruled out: " + out)
		fd.Explain = plain("Something holds requests back, but none of the engine's limits shows it: the batch is not at a plateau, the KV cache and the token budget have room, no adapter waits, drafts are accepted, the GPU is not saturated. vtop does not guess a cause.")
		fd.Action = plain("compare with a healthy replica of the same model (traffic mix, prompt lengths, version); look outside vLLM: the client, the network, the node")
		if !slices.Contains(v.Ruled, diagnose.LimitCompute) {
			// No GPU attributed to the endpoint: compute is not ruled out.
			fd.Summary = fd.Summary.Cat(plain("; compute not measured (no GPU attributed to this endpoint)"))
			fd.Explain = plain("Something holds requests back, and none of the limits vtop can see shows it: the batch is not at a plateau, the KV cache and the token budget have room, no adapter waits, drafts are accepted. Whether the GPU is saturated is not known: no GPU reading is attributed to this endpoint (GPUs of a host several replicas share are not). vtop does not guess a cause.")
			fd.Action = plain("read this endpoint's GPUs (nvidia-smi on its node, or dcgm-exporter with pod labels the targets match): a saturated GPU makes this compute, sized in replicas; else compare with a healthy replica of the same model and look outside vLLM")
		}
	},
}
