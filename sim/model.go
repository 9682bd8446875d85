package sim

import "time"

// Model is a served model and what one forward pass of it costs on the
// simulated GPU. The step-time terms follow how decode and prefill scale on
// real hardware: a fixed cost to stream the weights, a small cost per
// sequence, the KV bytes read for every context token, and compute per
// prefill token.
type Model struct {
	Name            string  // the model_name label (--served-model-name)
	WeightBytes     float64 // weights resident on the GPU
	KVBytesPerToken float64 // K and V of every layer for one token
	MaxModelLen     int     // --max-model-len

	StepBase        time.Duration // one forward pass with a tiny batch
	PerSeq          time.Duration // each scheduled sequence
	PerCtxToken     time.Duration // each context token a decoding sequence attends to
	PerPrefillToken time.Duration // each prompt token computed
}

// Models are the presets; a --models name that is not here gets the first
// preset's costs under its own name.
var Models = []Model{
	{Name: "meta-llama/Llama-3.1-8B-Instruct", WeightBytes: 16.06e9, KVBytesPerToken: 131072, MaxModelLen: 32768,
		StepBase: 6 * time.Millisecond, PerSeq: 40 * time.Microsecond, PerCtxToken: 25 * time.Nanosecond, PerPrefillToken: 35 * time.Microsecond},
	{Name: "Qwen/Qwen2.5-14B-Instruct", WeightBytes: 29.5e9, KVBytesPerToken: 196608, MaxModelLen: 32768,
		StepBase: 10500 * time.Microsecond, PerSeq: 60 * time.Microsecond, PerCtxToken: 38 * time.Nanosecond, PerPrefillToken: 62 * time.Microsecond},
}

// speed is the model's throughput relative to the reference preset,
// judged by prefill cost.
func (m *Model) speed() float64 {
	if m.PerPrefillToken <= 0 {
		return 1
	}
	return float64(Models[0].PerPrefillToken) / float64(m.PerPrefillToken)
}

// LookupModel returns the preset called name, or the first preset's costs
// under that name.
func LookupModel(name string) Model {
	for _, m := range Models {
		if m.Name == name {
			return m
		}
	}
	m := Models[0]
	if name != "" {
		m.Name = name
	}
	return m
}

// GPU hardware of every simulated device: an H100 SXM 80 GB.
const (
	gpuName        = "NVIDIA H100 80GB HBM3"
	gpuMemTotal    = 81559 << 20 // bytes, as NVML reports it
	gpuIdleW       = 72.0
	gpuMaxW        = 690.0 // what a saturated prefill step draws
	gpuPowerLimitW = 700.0
	gpuMaxSMClock  = 1980.0
	gpuIdleSMClock = 345.0
	gpuMemClock    = 2619.0
	gpuSlowdownC   = 87.0
	gpuAmbientC    = 30.0
	// vLLM's non-KV reservation inside --gpu-memory-utilization: activation
	// peak, CUDA graphs and the non-torch allocator.
	gpuReserveBytes = 4 << 30
	cudaContextB    = 512 << 20 // per process, outside the vLLM budget
)
