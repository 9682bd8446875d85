package sim

import (
	"fmt"
	"strings"

	"github.com/vtop-dev/vtop/sources"
)

// Profile is a vLLM generation (or SGLang) the simulator can impersonate: the release
// whose metric set, help texts and bucket layouts it exposes (all read from
// sources.Metrics), and the registry quirks of that release.
type Profile struct {
	Server  sources.Server // whose names it serves (zero: vLLM)
	Name    string         // what --version takes: v0.6, v0.10, v0.11, latest
	Gen     sources.Gen
	Version sources.Version
	// CacheLabels are the CacheConfig fields vllm:cache_config_info carries
	// as labels in this release (besides engine), as the dumps show them.
	CacheLabels []string
	// Scheduler defaults of the release for an 80 GB GPU.
	MaxNumSeqs       int
	MaxBatchedTokens int // 0: max(max_model_len, 2048) without chunked prefill (V0)
	ChunkedPrefill   bool
	PrefixCaching    bool
}

// multiprocess reports whether the release serves /metrics from
// prometheus_client's multiprocess registry (no process_* collectors, no
// _created series): V0 from 0.5.5 (MQLLMEngine), and V1 from 0.15 when data
// parallelism makes api_server_count default to the DP size.
func (p *Profile) multiprocess(dp int) bool {
	if p.Server == sources.ServerSGLang {
		return true // SGLang always serves from PROMETHEUS_MULTIPROC_DIR
	}
	if p.Gen == sources.GenV0 {
		return !p.Version.Less(sources.V(0, 5, 5))
	}
	return dp > 1 && !p.Version.Less(sources.V(0, 15, 0))
}

// engineLabel reports whether series carry the data-parallel engine label
// (V1 from 0.8.3).
func (p *Profile) engineLabel() bool {
	return p.Gen == sources.GenV1 && !p.Version.Less(sources.V(0, 8, 3))
}

var (
	cacheLabels06 = []string{"block_size", "cache_dtype", "cpu_offload_gb", "enable_prefix_caching",
		"gpu_memory_utilization", "is_attention_free", "num_cpu_blocks", "num_gpu_blocks",
		"num_gpu_blocks_override", "sliding_window", "swap_space_bytes"}
	cacheLabels010 = []string{"block_size", "cache_dtype", "calculate_kv_scales", "cpu_kvcache_space_bytes",
		"cpu_offload_gb", "enable_prefix_caching", "gpu_memory_utilization", "is_attention_free",
		"kv_sharing_fast_prefill", "mamba_cache_dtype", "mamba_page_size_padded", "mamba_ssm_cache_dtype",
		"num_cpu_blocks", "num_gpu_blocks", "num_gpu_blocks_override", "prefix_caching_hash_algo",
		"sliding_window", "swap_space", "swap_space_bytes"}
	cacheLabels011 = append(append([]string{}, cacheLabels010...), "kv_cache_memory_bytes")
	// No full capture of a release ≥0.12 exists; the label set is 0.11's
	// plus the KV offloading fields CacheConfig gained since.
	cacheLabelsLatest = append(append([]string{}, cacheLabels011...), "kv_offloading_backend", "kv_offloading_size")
)

// Profiles are the generations the simulator serves, oldest first.
var Profiles = []Profile{
	{Name: "v0.6", Gen: sources.GenV0, Version: sources.V(0, 6, 6), CacheLabels: cacheLabels06,
		MaxNumSeqs: 256, ChunkedPrefill: false, PrefixCaching: false},
	{Name: "v0.10", Gen: sources.GenV1, Version: sources.V(0, 10, 1), CacheLabels: cacheLabels010,
		MaxNumSeqs: 256, MaxBatchedTokens: 8192, ChunkedPrefill: true, PrefixCaching: true},
	{Name: "v0.11", Gen: sources.GenV1, Version: sources.V(0, 11, 0), CacheLabels: cacheLabels011,
		MaxNumSeqs: 256, MaxBatchedTokens: 8192, ChunkedPrefill: true, PrefixCaching: true},
	{Name: "latest", Gen: sources.GenV1, Version: sources.V(0, 20, 2), CacheLabels: cacheLabelsLatest,
		MaxNumSeqs: 256, MaxBatchedTokens: 8192, ChunkedPrefill: true, PrefixCaching: true},
	// SGLang as of early 2026 (its own release numbers): the label set of
	// the SMG capture (engine_type, moe_ep_rank, pp_rank, tp_rank), radix
	// cache on, --chunked-prefill-size 8192; --max-running-requests is
	// sized from memory by SGLang, 256 here.
	{Server: sources.ServerSGLang, Name: "sglang", Version: sources.V(0, 5, 9),
		MaxNumSeqs: 256, MaxBatchedTokens: 8192, ChunkedPrefill: true, PrefixCaching: true},
}

// DefaultProfile is what --version defaults to.
const DefaultProfile = "latest"

// LookupProfile finds a profile by name ("latest", "v0.10", "0.10" and
// "0.10.1" all work).
func LookupProfile(name string) (*Profile, error) {
	n := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(name)), "v")
	if n == "" {
		n = DefaultProfile
	}
	for i := range Profiles {
		p := &Profiles[i]
		short := strings.TrimPrefix(p.Name, "v")
		if n == short || n == p.Version.String() {
			return p, nil
		}
	}
	return nil, fmt.Errorf("unknown generation %q (have %s)", name, ProfileNames())
}

// ProfileNames lists the profile names for messages, oldest first.
func ProfileNames() string {
	var names []string
	for _, p := range Profiles {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}
