package sources

import "math"

// GPUField is one number of a GPU reading, named once: the accessor and
// the key every reader finds it by. The recording writes and reads the
// numbers of GPUFields by Wire, the JSON report by JSON, the text report
// labels them by Label: a new number is a field of GPU plus a row here
// (nvitop's SNAPSHOT_KEYS), not an edit to three parallel structs.
type GPUField struct {
	Wire  string // the recording's key (docs/recording.md); never renamed
	JSON  string // the JSON report's key (docs/json-report.md); never renamed
	Label string // the word the text report and the export's help use
	Short string // the word before it on the GPU line ("" where its unit says it)
	Unit  string // %, bytes, °C, W, MHz, count, bytes/s
	At    func(*GPU) *float64
}

// GPUFieldID names a row of GPUFields for a reader that shows some of them
// (the GPU line): the number's accessor, key, words and unit are the row's.
type GPUFieldID uint8

const (
	GPUUtil GPUFieldID = iota
	GPUUtilMem
	GPUMemUsed
	GPUMemTotal
	GPUTemp
	GPUTempSlowdown
	GPUPower
	GPUPowerLimit
	GPUSMClock
	GPUMemClock
	GPUECCUncorrected
	GPURetiredPages
	GPUPCIeTx
	GPUPCIeRx
	NumGPUFields
)

// GPUFields are the numbers of a GPU reading, in the order every reader
// lists them. A recording made before a row was added lacks its key:
// the reader leaves that number unknown (NaN), never zero.
var GPUFields = [NumGPUFields]GPUField{
	GPUUtil:           {"util_gpu", "utilization_percent", "util", "util", "%", func(g *GPU) *float64 { return &g.UtilGPU }},
	GPUUtilMem:        {"util_mem", "memory_utilization_percent", "mem-io", "mem-io", "%", func(g *GPU) *float64 { return &g.UtilMem }},
	GPUMemUsed:        {"mem_used", "memory_used_bytes", "memory used", "mem", "bytes", func(g *GPU) *float64 { return &g.MemUsed }},
	GPUMemTotal:       {"mem_total", "memory_total_bytes", "memory total", "", "bytes", func(g *GPU) *float64 { return &g.MemTotal }},
	GPUTemp:           {"temp_c", "temperature_c", "temperature", "", "°C", func(g *GPU) *float64 { return &g.TempC }},
	GPUTempSlowdown:   {"temp_slowdown_c", "temperature_slowdown_c", "slowdown", "slowdown", "°C", func(g *GPU) *float64 { return &g.TempSlowdownC }},
	GPUPower:          {"power_w", "power_w", "power", "", "W", func(g *GPU) *float64 { return &g.PowerW }},
	GPUPowerLimit:     {"power_limit_w", "power_limit_w", "power limit", "", "W", func(g *GPU) *float64 { return &g.PowerLimitW }},
	GPUSMClock:        {"sm_clock_mhz", "sm_clock_mhz", "SM", "SM", "MHz", func(g *GPU) *float64 { return &g.SMClockMHz }},
	GPUMemClock:       {"mem_clock_mhz", "memory_clock_mhz", "mem", "mem", "MHz", func(g *GPU) *float64 { return &g.MemClockMHz }},
	GPUECCUncorrected: {"ecc_uncorrected", "ecc_uncorrected_volatile", "ECC uncorrected", "ECC uncorrected", "count", func(g *GPU) *float64 { return &g.ECCUncorrected }},
	GPURetiredPages:   {"retired_pages", "retired_pages_or_remapped_rows", "retired/remapped", "retired/remapped", "count", func(g *GPU) *float64 { return &g.RetiredPages }},
	GPUPCIeTx:         {"pcie_tx_bps", "pcie_tx_bytes_per_s", "PCIe tx", "PCIe tx", "bytes/s", func(g *GPU) *float64 { return &g.PCIeTxBps }},
	GPUPCIeRx:         {"pcie_rx_bps", "pcie_rx_bytes_per_s", "PCIe rx", "PCIe rx", "bytes/s", func(g *GPU) *float64 { return &g.PCIeRxBps }},
}

// Num is g's number id.
func (g *GPU) Num(id GPUFieldID) float64 { return *GPUFields[id].At(g) }

// SetUnknown makes every number of g unknown (NaN): a reader starts from
// this and fills what it could read.
func (g *GPU) SetUnknown() {
	for i := range GPUFields {
		*GPUFields[i].At(g) = math.NaN()
	}
}
