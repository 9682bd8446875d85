package detect

import (
	"strings"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// sglangFlag is a vLLM flag vtop advises with, and SGLang's for the same
// lever; none (with why) where SGLang has no such switch. Rules compute
// their advice in vLLM's terms once; a finding on an SGLang server is
// told in SGLang's, so no vLLM flag reaches an SGLang operator.
type sglangFlag struct{ vllm, sglang, none string }

var sglangFlags = []sglangFlag{
	{vllm: "--max-num-seqs", sglang: "--max-running-requests"},
	{vllm: "--max-num-batched-tokens", sglang: "--chunked-prefill-size"},
	{vllm: "--gpu-memory-utilization", sglang: "--mem-fraction-static"},
	{vllm: "--max-model-len", sglang: "--context-length"},
	{vllm: "--kv-cache-dtype", sglang: "--kv-cache-dtype"},
	{vllm: "--enable-chunked-prefill", none: "SGLang chunks prefills by default (--chunked-prefill-size)"},
	{vllm: "--enable-prefix-caching", none: "SGLang's radix cache is on unless --disable-radix-cache"},
	{vllm: "--swap-space", none: "SGLang retracts requests, it does not swap KV to CPU"},
}

// sglangWords rewrites vLLM's names in a finding's text: its flags (a
// flag SGLang lacks becomes what SGLang does instead), the config key
// operators set, and what SGLang calls a preemption.
var sglangWords = func() *strings.Replacer {
	var pairs []string
	for _, f := range sglangFlags {
		to := f.sglang
		if to == "" {
			to = "(no SGLang flag: " + f.none + ")"
		}
		pairs = append(pairs, f.vllm, to)
	}
	pairs = append(pairs, "max_num_seqs", "max_num_seqs (SGLang's --max-running-requests)",
		"(vLLM does not expose it)", "(SGLang does not expose it)",
		// What advice needs and SGLang has no family for.
		"("+histName(sources.HIterTokens)+" not exposed or empty)", "(not exposed by SGLang)",
		"("+histName(sources.HPromptLen)+" and "+histName(sources.HGenLen)+" saw no finished request in the window)",
		"(request lengths not exposed by SGLang)")
	return strings.NewReplacer(pairs...)
}()

// inEngineTerms tells fd in the terms of the endpoint's engine.
func inEngineTerms(fd *diagnose.Finding, ep *diagnose.EndpointView) {
	if ep == nil || ep.Version.Server != sources.ServerSGLang {
		return
	}
	flags := fd.Flags[:0:0]
	for _, fc := range fd.Flags {
		if sglangFlagChange(&fc) {
			flags = append(flags, fc)
		}
	}
	fd.Flags = flags
	fd.Summary = fd.Summary.Replace(sglangWords)
	fd.Explain = fd.Explain.Replace(sglangWords)
	fd.Action = fd.Action.Replace(sglangWords)
}

// sglangFlagChange tells fc in SGLang's terms; false when SGLang has no
// such lever (the finding's action says what SGLang does instead).
func sglangFlagChange(fc *diagnose.FlagChange) bool {
	for _, f := range sglangFlags {
		if f.vllm == fc.Flag {
			if f.sglang == "" {
				return false
			}
			fc.Flag = f.sglang
		}
	}
	fc.From, fc.To, fc.Why = fc.From.Replace(sglangWords), fc.To.Replace(sglangWords), fc.Why.Replace(sglangWords)
	return true
}

// InEngineTerms tells a line written in vLLM's terms (a verdict's, whose
// limit names carry vLLM's flags) in those of server.
func InEngineTerms(s string, server sources.Server) string {
	if server != sources.ServerSGLang {
		return s
	}
	return sglangWords.Replace(s)
}

// verdictInEngineTerms is inEngineTerms for the binding-limit verdict.
func verdictInEngineTerms(v *diagnose.Verdict, ep *diagnose.EndpointView) {
	v.Server = ep.Version.Server
	if v.Flag == nil || ep.Version.Server != sources.ServerSGLang {
		return
	}
	fc := *v.Flag
	if sglangFlagChange(&fc) {
		v.Flag = &fc
	} else {
		v.Flag = nil
	}
}
