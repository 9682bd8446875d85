package detect

import (
	"math"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// The arithmetic behind the recommended flag values. Every number comes
// from measured data or from the engine's own configuration, and Why shows
// the sum; when an input is missing the recommendation names it instead.

// vLLM facts the advice depends on (vllm/engine/arg_utils.py,
// vllm/config.py across the tagged releases).
var (
	// vLLM's --gpu-memory-utilization default, the same in every release.
	defaultGPUMemUtil = 0.90
	// --kv-cache-dtype fp8 (e4m3) arrived during 0.4.x; every release from
	// 0.5.0 certainly accepts it, so older ones get no such advice.
	fp8KVSince = sources.V(0, 5, 0)
)

// SeqFit is how many sequences of the measured average length the KV cache
// holds with headroom: the --max-num-seqs that stops KV thrashing.
type SeqFit struct {
	Blocks, BlockSize float64 // from cache_config_info (one engine)
	AvgSeq            float64 // mean prompt + generated tokens per finished request
	Headroom          float64 // share of the blocks kept free, 0..1
	BlocksPerSeq      float64 // ceil(AvgSeq / BlockSize): a sequence holds whole blocks
	Usable            float64 // floor(Blocks × (1 − Headroom))
	N                 int     // floor(Usable / BlocksPerSeq)
}

// FitMaxNumSeqs computes SeqFit. ok is false when an input is missing or
// nonsensical; missing then names what is missing.
func FitMaxNumSeqs(blocks, blockSize, avgSeq, headroom float64) (f SeqFit, missing string) {
	f = SeqFit{Blocks: blocks, BlockSize: blockSize, AvgSeq: avgSeq, Headroom: headroom}
	switch {
	case bad(blocks) || blocks <= 0:
		return f, "num_gpu_blocks unknown (" + cacheInfoName() + " does not carry it)"
	case bad(blockSize) || blockSize <= 0:
		return f, "block_size unknown (" + cacheInfoName() + " does not carry it)"
	case bad(avgSeq) || avgSeq <= 0:
		return f, "average sequence length unknown (" + histName(sources.HPromptLen) + " and " +
			histName(sources.HGenLen) + " saw no finished request in the window)"
	case headroom < 0 || headroom >= 1:
		return f, "headroom must be in [0, 1)"
	}
	f.BlocksPerSeq = math.Ceil(avgSeq/blockSize - 1e-9)
	f.Usable = math.Floor(blocks*(1-headroom) + 1e-9)
	f.N = int(math.Floor(f.Usable / f.BlocksPerSeq))
	return f, ""
}

// Why shows the arithmetic.
func (f SeqFit) Why() diagnose.Text {
	return say("%s blocks × (1 − %s headroom) = %s usable; %s-token average sequence ÷ %s tokens per block = %s blocks per sequence (rounded up: a sequence holds whole blocks); %s ÷ %s = %s sequences",
		grouped(f.Blocks), pct(f.Headroom), grouped(f.Usable), grouped(f.AvgSeq), grouped(f.BlockSize),
		grouped(f.BlocksPerSeq), grouped(f.Usable), grouped(f.BlocksPerSeq), grouped(float64(f.N)))
}

// BudgetFit estimates the --max-num-batched-tokens that brings the slow
// steps' inter-token latency down to a target. Step time grows with the
// tokens a step carries; the median step (ITL p50 at the median step size)
// and the slow steps (ITL p99 at the p99 step size) give that growth, and
// the budget is where the line meets the target.
type BudgetFit struct {
	ITL50, ITL99   float64       // s
	Iter50, Iter99 float64       // tokens per step
	Target         float64       // s
	PerToken       float64       // s per extra token in a step
	Exact          float64       // the tokens per step that meet the target
	Tokens         int           // the budget: Exact rounded down (roundTokens)
	rounding       diagnose.Text // how, in words
}

// FitBatchedTokens computes BudgetFit; missing names what is missing or why
// the data gives no answer.
func FitBatchedTokens(itl50, itl99, iter50, iter99, target float64) (b BudgetFit, missing diagnose.Text) {
	b = BudgetFit{ITL50: itl50, ITL99: itl99, Iter50: iter50, Iter99: iter99, Target: target}
	switch {
	case bad(iter50) || bad(iter99):
		return b, plain("tokens per step unknown (" + histName(sources.HIterTokens) + " not exposed or empty)")
	case bad(itl50) || bad(itl99):
		return b, plain("inter-token latency unknown")
	case iter99 <= iter50 || itl99 <= itl50:
		return b, plain("slow steps carry no more tokens than the median step: the stutter is not from step size")
	case itl50 >= target:
		return b, plain("even the median step misses the target: the decode batch itself is too large")
	}
	b.PerToken = (itl99 - itl50) / (iter99 - iter50)
	b.Exact = iter50 + (target-itl50)/b.PerToken
	b.Tokens, b.rounding = roundTokens(b.Exact)
	switch {
	case b.Tokens < 64 || float64(b.Tokens) <= iter50:
		return b, plain("the target leaves no room above the median step")
	case float64(b.Tokens) >= iter99:
		// A budget at or above the slow steps' size would not cut them.
		return b, say("the budget that meets the target (%d) is not below the slow steps' %s tokens: step size is not what makes them slow", b.Tokens, grouped(iter99))
	}
	return b, diagnose.Text{}
}

// Why shows the arithmetic.
func (b BudgetFit) Why() diagnose.Text {
	return say("tokens see steps of %s tokens at p50 taking %s, and of %s tokens at p99 taking %s: %s per extra token; %s + (%s − %s) ÷ %s = %s tokens per step meet the %s target; %s",
		grouped(b.Iter50), secs(b.ITL50), grouped(b.Iter99), secs(b.ITL99), usPerToken(b.PerToken),
		grouped(b.Iter50), secs(b.Target), secs(b.ITL50), usPerToken(b.PerToken),
		grouped(math.Floor(b.Exact)), secs(b.Target), b.rounding)
}

// util2 renders a --gpu-memory-utilization value as vLLM users write it.
func util2(v float64) diagnose.Value {
	return diagnose.Value{Kind: diagnose.KindFixed, Num: v, Prec: 2}
}

func usPerToken(v float64) diagnose.Text { return say("%sµs", dec(v*1e6, 1)) }

// MemUtilStep is a --gpu-memory-utilization change.
type MemUtilStep struct {
	From, To float64
	Why      diagnose.Text
}

// LowerMemUtil steps --gpu-memory-utilization down. With the GPU's memory
// reading it leaves the requested headroom; without it, it takes one step.
func LowerMemUtil(util, used, total, headroom, step float64) (MemUtilStep, string) {
	if bad(util) || util <= 0 {
		return MemUtilStep{}, "gpu_memory_utilization unknown (" + cacheInfoName() + " does not carry it)"
	}
	s := MemUtilStep{From: util}
	if !bad(used) && !bad(total) && total > 0 {
		over := used/total - (1 - headroom)
		if over > 0 {
			s.To = math.Floor((util-over)*100+1e-9) / 100
			s.Why = say("the GPU uses %s of %s (%s); keeping %s free takes %s off: %s − %s = %s, rounded down to 0.01 as the flag is written: %s",
				mib(used), mib(total), pct(used/total), pct(headroom), dec(over, 3), dec(util, 2), dec(over, 3), dec(util-over, 3), dec(s.To, 2))
			return s, ""
		}
	}
	s.To = math.Round((util-step)*100) / 100
	s.Why = say("one step of %s (%s of the GPU's memory moves from the KV cache to headroom): %s − %s = %s (to 0.01, as the flag is written); repeat while the risk remains",
		dec(step, 2), pct(step), dec(util, 2), dec(step, 2), dec(s.To, 2))
	return s, ""
}

// cacheInfoName and histName spell metric names for messages through the
// one table.
func cacheInfoName() string { return sources.FamilyName(sources.RoleCacheInfo, 0) }
func histName(h sources.Hist) string {
	return sources.FamilyName(sources.RoleHist, uint8(h))
}

// engineCache returns one engine's KV blocks and block size for a unit: the
// unit's own when it is one engine, else the smallest engine's (a flag
// applies per engine).
func engineCache(u *unit) (blocks, blockSize float64, note string) {
	if u.ep.Version.Server == sources.ServerSGLang {
		// SGLang's pool is counted in tokens (max_total_num_tokens): a
		// "block" of one token.
		return u.st.KVCapacityTokens / float64(max(1, u.st.Engines)), 1, ""
	}
	if u.st.Engines <= 1 || len(u.ep.Subs) <= 1 {
		return u.st.NumGPUBlocks, u.st.BlockSize, ""
	}
	blocks, blockSize = math.NaN(), math.NaN()
	differ := false
	for i := range u.ep.Subs {
		s := &u.ep.Subs[i].Stats
		if u.model != "" && u.ep.Subs[i].Key.Model != u.model {
			continue
		}
		if !bad(blocks) && s.NumGPUBlocks != blocks {
			differ = true
		}
		if bad(blocks) || s.NumGPUBlocks < blocks {
			blocks, blockSize = s.NumGPUBlocks, s.BlockSize
		}
	}
	if differ {
		note = "engines differ in size; the smallest engine's blocks are used"
	}
	return blocks, blockSize, note
}

// avgSeq is the mean KV footprint a finished request reached: its prompt
// plus what it generated.
func avgSeq(st *diagnose.Stats) float64 { return st.AvgPromptLen + st.AvgGenLen }

// batchSlots is how many sequences the unit (an engine or an endpoint) can
// run at once; 0: unknown.
func batchSlots(u *unit) int { return diagnose.BatchSlots(currentMaxNumSeqs(u.ep), u.st) }

// LiveFit is how many sequences the KV cache holds at what the running
// sequences hold now: KV usage ÷ running is one running sequence's share of
// the cache. Running requests are longer than those that finished in the
// window (they are still growing), so this is the fit the cache-config
// arithmetic must not exceed.
type LiveFit struct {
	KV, Running, Headroom float64 // running: per engine
	Blocks                float64 // one engine's blocks; NaN unknown (only for the words)
	N                     int     // floor((1 − headroom) × running ÷ KV usage)
}

// FitLive computes LiveFit; missing names what is missing.
func FitLive(kv, running, blocks, headroom float64) (LiveFit, string) {
	f := LiveFit{KV: kv, Running: running, Headroom: headroom, Blocks: blocks}
	switch {
	case bad(kv) || kv <= 0.01:
		return f, "KV usage unknown or empty"
	case bad(running) || running < 1:
		return f, "no sequence running"
	case headroom < 0 || headroom >= 1:
		return f, "headroom must be in [0, 1)"
	}
	f.N = int(math.Floor((1-headroom)*running/kv + 1e-9))
	return f, ""
}

// Why shows the arithmetic.
func (f LiveFit) Why() diagnose.Text {
	if !bad(f.Blocks) && f.Blocks > 0 {
		per := f.KV * f.Blocks / f.Running
		return say("live: KV %s × %s blocks ÷ %s running = %s blocks per running sequence; %s usable ÷ %s = %s sequences",
			pct(f.KV), grouped(f.Blocks), grouped(f.Running), dec(per, 1), grouped(math.Floor(f.Blocks*(1-f.Headroom)+1e-9)), dec(per, 1), grouped(float64(f.N)))
	}
	return say("live: (1 − %s headroom) × %s running ÷ KV %s = %s sequences",
		pct(f.Headroom), grouped(f.Running), pct(f.KV), grouped(float64(f.N)))
}

// maxNumSeqsChange is the --max-num-seqs advice: the smaller of the
// cache-config fit (blocks ÷ finished requests' average length) and the
// live fit (what running sequences hold now), both in Why. lower: the
// engine holds more than fits (thrashing); otherwise room to grow
// (starvation). It is the lever only when the number moves the engine the
// way the finding needs: lowering to a value below what runs now and
// below the current setting, raising past the current setting but never
// past the live fit. n is the recommended value, rounded (roundSeqs; 0
// when neither fit can be computed).
func maxNumSeqsChange(u *unit, headroom float64, lower bool) (fc diagnose.FlagChange, n int, lever bool) {
	blocks, bs, note := engineCache(u)
	fit, miss := FitMaxNumSeqs(blocks, bs, avgSeq(u.st), headroom)
	engines := float64(max(1, u.st.Engines))
	running := u.st.Running / engines
	live, liveMiss := FitLive(u.st.KVUsage, running, blocks, headroom)
	fc = diagnose.FlagChange{Flag: "--max-num-seqs"}
	cur := currentMaxNumSeqs(u.ep)
	if cur > 0 {
		fc.From = intv(cur)
	}
	var why []diagnose.Text
	switch {
	case miss == "" && fit.N >= 1:
		n = fit.N
		why = append(why, say("cache config: %s", fit.Why()))
	case miss == "":
		why = append(why, say("cache config: %s (one average sequence needs more than the usable KV cache)", fit.Why()))
	default:
		why = append(why, say("cache config: cannot compute: %s", miss))
	}
	if liveMiss == "" && live.N >= 1 {
		why = append(why, live.Why())
		if n == 0 || live.N < n {
			n = live.N
		}
	} else if liveMiss != "" {
		why = append(why, say("live: cannot compute: %s", liveMiss))
	}
	if note != "" {
		why = append(why, plain(note))
	}
	if cur > 0 && u.ep.MaxNumSeqs <= 0 {
		p, _ := plateau(u.ep)
		why = append(why, say("current value from the plateau: %s running per engine throughout %s with requests waiting and KV at %s", grouped(p.per), dur(p.span), pct(u.st.KVUsage)))
	}
	if n < 1 {
		to := "cannot compute: " + miss
		if miss == "" {
			to = "cannot compute: one average sequence needs more than the usable KV cache"
		}
		if cur == 0 {
			to += "; max_num_seqs unknown too: set it in the config file's targets"
		}
		fc.To = diagnose.Str(to)
		fc.Why = diagnose.Join(why, "; ")
		return fc, 0, false
	}
	// Whether it is the lever is the evidence's question (the exact fit);
	// the value to set is rounded as operators set it.
	exact := n
	n, rounding := roundSeqs(exact)
	fc.To, fc.Exact = intv(n), float64(exact)
	why = append(why, say("the smaller: %d", exact), rounding)
	fc.Why = diagnose.Join(why, "; ")
	switch {
	case lower && !bad(running) && float64(exact) >= running:
		fc.Why = fc.Why.Cat(say("; not below the %s sequences running now per engine, so lowering to it would not relieve the cache", grouped(running)))
		return fc, n, false
	case !lower && !bad(running) && float64(exact) <= running:
		fc.Why = fc.Why.Cat(say("; not above the %s sequences running now per engine: no room to admit more", grouped(running)))
		return fc, n, false
	case cur == 0:
		fc.Why = fc.Why.Cat(plain("; the current value is unknown (vLLM does not expose it): set max_num_seqs in the config file's targets to compare"))
	case lower && n >= cur:
		return fc, n, false // already at or below the fit: not the lever
	case !lower && n <= cur:
		return fc, n, false // no KV room to admit more (rounded, no step up)
	}
	return fc, n, true
}

// chunkedPrefillFlag is --enable-chunked-prefill, which only V0 needs: V1
// always schedules prefills in chunks within --max-num-batched-tokens.
func chunkedPrefillFlag(v sources.VersionRange, why diagnose.Text) (diagnose.FlagChange, bool) {
	if v.Gen != sources.GenV0 {
		return diagnose.FlagChange{}, false
	}
	return diagnose.FlagChange{Flag: "--enable-chunked-prefill", To: diagnose.Str("on (if not set)"),
		Why: why.Cat(plain("; V0 runs a prompt's prefill as one step unless chunked prefill is on (V1 always chunks)"))}, true
}

// kvDtypeFlag suggests an fp8 KV cache when the engine stores KV at the
// model's precision.
func kvDtypeFlag(ep *diagnose.EndpointView, blocks float64) (diagnose.FlagChange, bool) {
	if ep.Cache == nil || ep.Cache.CacheDtype != "auto" || ep.Version.Below(fp8KVSince) {
		return diagnose.FlagChange{}, false
	}
	why := plain("KV is stored at the model's precision (cache_dtype auto); fp8 stores each element in 1 byte instead of 2 for a 16-bit model")
	if !bad(blocks) && blocks > 0 {
		why = why.Add(": about 2 × %s = %s blocks in the same memory", grouped(blocks), grouped(2*blocks))
	}
	return diagnose.FlagChange{Flag: "--kv-cache-dtype", From: diagnose.Str("auto"), To: diagnose.Str("fp8"), Why: why.Add("; check accuracy on your prompts")}, true
}

// raiseMemUtilFlag suggests vLLM's default --gpu-memory-utilization to an
// engine deployed below it.
func raiseMemUtilFlag(util float64) (diagnose.FlagChange, bool) {
	if bad(util) || util >= defaultGPUMemUtil-1e-9 {
		return diagnose.FlagChange{}, false
	}
	return diagnose.FlagChange{Flag: "--gpu-memory-utilization", From: util2(util), To: util2(defaultGPUMemUtil),
		Why: say("deployed below vLLM's default %s: the KV cache may take %s more of the GPU's memory (%s − %s); first check that nothing else needs that memory",
			util2(defaultGPUMemUtil), pct(defaultGPUMemUtil-util), util2(defaultGPUMemUtil), util2(util))}, true
}
