package diagnose

import "math"

// StatField is one number of an endpoint's (or a pool's) Stats, named once:
// the accessor, the JSON report's object and key, the screen's word and the
// unit. The JSON report writes the numbers of StatFields by Group and JSON,
// the endpoint view labels and formats them by Label and Unit, UnknownStats
// starts them all unknown: a new number is a field of Stats, the code that
// computes it and a row here (as sources.GPUFields is for GPUs).
//
// There is no recording key: a recording keeps the raw expositions, and a
// replay computes these from them as the live run did.
type StatField struct {
	Group string // the report's object under stats: cache, queue, throughput, speculative, kv_transfer; "" not reported
	JSON  string // the key in it (docs/json-report.md); never renamed
	// Before is the member of Group's object, not a number of this table,
	// that the report writes this number before; "" after them all.
	Before string
	Label  string // the screen's word before the number ("" where the row or the unit says it)
	Unit   Unit
	At     func(*Stats) *float64
}

// StatID names a row of StatFields.
type StatID uint8

const (
	StatKVUsage StatID = iota
	StatKVUsageMax
	StatKVCapacityTokens
	StatNumGPUBlocks
	StatBlockSize
	StatGPUMemUtil
	StatPrefixHitRatio
	StatPreemptions
	StatSwapped
	StatCPUKVUsage
	StatRunning
	StatWaiting
	StatWaitingCapacity
	StatWaitingDeferred
	StatPromptTokRate
	StatGenTokRate
	StatReqRate
	StatAbortShare
	StatAvgPromptLen
	StatAvgGenLen
	StatMeanIterTokens
	StatSpecAccept
	StatSpecAcceptLen
	StatSpecDraftsPerStep
	StatKVXferFail
	StatKVExpired
	StatKVOffload
	StatPrefixQueryRate
	StatPromptCachedRate
	StatSpecDraftRate
	StatSpecDraftTokRate
	StatSpecAcceptedRate
	StatErrorShare
	StatRejectRate
	StatHTTPRate
	StatHTTP4xxShare
	StatPromptLenTop
	StatPromptOverTop
	NumStats
)

// StatFields are Stats' numbers, in the order the report writes each
// object's.
var StatFields = [NumStats]StatField{
	StatKVUsage:          {"cache", "kv_usage", "prefix_caching", "", UnitRatio, func(s *Stats) *float64 { return &s.KVUsage }},
	StatKVUsageMax:       {"cache", "kv_usage_max_engine", "prefix_caching", "fullest engine", UnitRatio, func(s *Stats) *float64 { return &s.KVUsageMax }},
	StatKVCapacityTokens: {"cache", "kv_capacity_tokens", "prefix_caching", "", UnitTokens, func(s *Stats) *float64 { return &s.KVCapacityTokens }},
	StatNumGPUBlocks:     {"cache", "num_gpu_blocks", "prefix_caching", "blocks", UnitCount, func(s *Stats) *float64 { return &s.NumGPUBlocks }},
	StatBlockSize:        {"cache", "block_size", "prefix_caching", "block size", UnitTokens, func(s *Stats) *float64 { return &s.BlockSize }},
	StatGPUMemUtil:       {"cache", "gpu_memory_utilization", "prefix_caching", "gpu memory utilization", UnitRatio, func(s *Stats) *float64 { return &s.GPUMemUtil }},
	StatPrefixHitRatio:   {"cache", "prefix_hit_ratio", "", "prefix hit", UnitRatio, func(s *Stats) *float64 { return &s.PrefixHitRatio }},
	StatPreemptions:      {"cache", "preemptions_per_s", "", "preempt", UnitPerSec, func(s *Stats) *float64 { return &s.PreemptionsRate }},
	StatSwapped:          {"cache", "swapped", "", "swapped", UnitCount, func(s *Stats) *float64 { return &s.Swapped }},
	StatCPUKVUsage:       {"cache", "cpu_kv_usage", "", "CPU KV", UnitRatio, func(s *Stats) *float64 { return &s.CPUKVUsage }},

	StatRunning:         {"queue", "running", "", "running", UnitCount, func(s *Stats) *float64 { return &s.Running }},
	StatWaiting:         {"queue", "waiting", "", "waiting", UnitCount, func(s *Stats) *float64 { return &s.Waiting }},
	StatWaitingCapacity: {"queue", "waiting_capacity", "", "capacity", UnitCount, func(s *Stats) *float64 { return &s.WaitingCapacity }},
	StatWaitingDeferred: {"queue", "waiting_deferred", "", "deferred", UnitCount, func(s *Stats) *float64 { return &s.WaitingDeferred }},

	StatPromptTokRate:  {"throughput", "prompt_tokens_per_s", "finish_reasons", "prompt", UnitTokPerSec, func(s *Stats) *float64 { return &s.PromptTokRate }},
	StatGenTokRate:     {"throughput", "generation_tokens_per_s", "finish_reasons", "gen", UnitTokPerSec, func(s *Stats) *float64 { return &s.GenTokRate }},
	StatReqRate:        {"throughput", "requests_per_s", "finish_reasons", "", UnitReqPerSec, func(s *Stats) *float64 { return &s.ReqRate }},
	StatAbortShare:     {"throughput", "abort_share", "finish_reasons", "abort", UnitRatio, func(s *Stats) *float64 { return &s.AbortShare }},
	StatAvgPromptLen:   {"throughput", "avg_prompt_tokens", "finish_reasons", "prompt", UnitTokens, func(s *Stats) *float64 { return &s.AvgPromptLen }},
	StatAvgGenLen:      {"throughput", "avg_generation_tokens", "finish_reasons", "gen", UnitTokens, func(s *Stats) *float64 { return &s.AvgGenLen }},
	StatMeanIterTokens: {"throughput", "mean_tokens_per_step", "finish_reasons", "tokens/step", UnitTokens, func(s *Stats) *float64 { return &s.MeanIterTokens }},

	StatSpecAccept:        {"speculative", "acceptance", "accepted_by_position", "accept", UnitRatio, func(s *Stats) *float64 { return &s.SpecAcceptRate }},
	StatSpecAcceptLen:     {"speculative", "tokens_per_step", "accepted_by_position", "tokens/step", UnitNumber, func(s *Stats) *float64 { return &s.SpecAcceptLen }},
	StatSpecDraftsPerStep: {"speculative", "drafts_per_step", "accepted_by_position", "drafts/step", UnitNumber, func(s *Stats) *float64 { return &s.SpecDraftsPerStep }},

	StatKVXferFail: {"kv_transfer", "failed_transfers_per_s", "", "failed", UnitPerSec, func(s *Stats) *float64 { return &s.KVXferFailRate }},
	StatKVExpired:  {"kv_transfer", "expired_requests_per_s", "", "expired", UnitPerSec, func(s *Stats) *float64 { return &s.KVExpiredRate }},
	StatKVOffload:  {"kv_transfer", "offload_bytes_per_s", "", "offload", UnitBytesPerSec, func(s *Stats) *float64 { return &s.KVOffloadRate }},

	// The rules' inputs, not reported.
	StatPrefixQueryRate:  {"", "", "", "prefix queried", UnitTokPerSec, func(s *Stats) *float64 { return &s.PrefixQueryRate }},
	StatPromptCachedRate: {"", "", "", "prompt cached", UnitTokPerSec, func(s *Stats) *float64 { return &s.PromptCachedRate }},
	StatSpecDraftRate:    {"", "", "", "drafts", UnitPerSec, func(s *Stats) *float64 { return &s.SpecDraftRate }},
	StatSpecDraftTokRate: {"", "", "", "drafted", UnitTokPerSec, func(s *Stats) *float64 { return &s.SpecDraftTokRate }},
	StatSpecAcceptedRate: {"", "", "", "accepted", UnitTokPerSec, func(s *Stats) *float64 { return &s.SpecAcceptedRate }},
	StatErrorShare:       {"", "", "", "error", UnitRatio, func(s *Stats) *float64 { return &s.ErrorShare }},
	StatRejectRate:       {"", "", "", "rejected", UnitPerSec, func(s *Stats) *float64 { return &s.RejectRate }},
	StatHTTPRate:         {"", "", "", "answered", UnitReqPerSec, func(s *Stats) *float64 { return &s.HTTPRate }},
	StatHTTP4xxShare:     {"", "", "", "answered 4xx", UnitRatio, func(s *Stats) *float64 { return &s.HTTP4xxShare }},
	StatPromptLenTop:     {"", "", "", "prompt buckets end at", UnitTokens, func(s *Stats) *float64 { return &s.PromptLenTop }},
	StatPromptOverTop:    {"", "", "", "prompts above it", UnitRatio, func(s *Stats) *float64 { return &s.PromptOverTop }},
}

// Num is s's number id.
func (s *Stats) Num(id StatID) float64 { return *StatFields[id].At(s) }

// UnknownStats is Stats with every number unknown (NaN): a target that
// never answered has no values, not zeros.
func UnknownStats() Stats {
	n := math.NaN()
	q := Quantiles{P50: n, P90: n, P95: n, P99: n, Mean: n, Count: n, Lowest: n, Highest: n}
	s := Stats{TTFT: q, ITL: q, TPOT: q, E2E: q, Queue: q, Prefill: q, Decode: q, IterTokens: q, IterTokensByToken: q}
	for i := range StatFields {
		*StatFields[i].At(&s) = n
	}
	return s
}
