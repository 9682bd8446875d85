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
	Label string // the word the screen and the text report use
	Unit  string // %, bytes, °C, W, MHz, count, bytes/s
	At    func(*GPU) *float64
}

// GPUFields are the numbers of a GPU reading, in the order every reader
// lists them. A recording made before a row was added lacks its key:
// the reader leaves that number unknown (NaN), never zero.
var GPUFields = [...]GPUField{
	{"util_gpu", "utilization_percent", "util", "%", func(g *GPU) *float64 { return &g.UtilGPU }},
	{"util_mem", "memory_utilization_percent", "mem-io", "%", func(g *GPU) *float64 { return &g.UtilMem }},
	{"mem_used", "memory_used_bytes", "memory used", "bytes", func(g *GPU) *float64 { return &g.MemUsed }},
	{"mem_total", "memory_total_bytes", "memory total", "bytes", func(g *GPU) *float64 { return &g.MemTotal }},
	{"temp_c", "temperature_c", "temperature", "°C", func(g *GPU) *float64 { return &g.TempC }},
	{"temp_slowdown_c", "temperature_slowdown_c", "slowdown", "°C", func(g *GPU) *float64 { return &g.TempSlowdownC }},
	{"power_w", "power_w", "power", "W", func(g *GPU) *float64 { return &g.PowerW }},
	{"power_limit_w", "power_limit_w", "power limit", "W", func(g *GPU) *float64 { return &g.PowerLimitW }},
	{"sm_clock_mhz", "sm_clock_mhz", "SM", "MHz", func(g *GPU) *float64 { return &g.SMClockMHz }},
	{"mem_clock_mhz", "memory_clock_mhz", "mem", "MHz", func(g *GPU) *float64 { return &g.MemClockMHz }},
	{"ecc_uncorrected", "ecc_uncorrected_volatile", "ECC uncorrected", "count", func(g *GPU) *float64 { return &g.ECCUncorrected }},
	{"retired_pages", "retired_pages_or_remapped_rows", "retired/remapped", "count", func(g *GPU) *float64 { return &g.RetiredPages }},
	{"pcie_tx_bps", "pcie_tx_bytes_per_s", "PCIe tx", "bytes/s", func(g *GPU) *float64 { return &g.PCIeTxBps }},
	{"pcie_rx_bps", "pcie_rx_bytes_per_s", "PCIe rx", "bytes/s", func(g *GPU) *float64 { return &g.PCIeRxBps }},
}

// SetUnknown makes every number of g unknown (NaN): a reader starts from
// this and fills what it could read.
func (g *GPU) SetUnknown() {
	for i := range GPUFields {
		*GPUFields[i].At(g) = math.NaN()
	}
}
