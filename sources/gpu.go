package sources

import (
	"context"
	"time"
)

// GPUSource reads the GPUs of this machine: NVML on a real node, the
// simulator in the demo. Implementations never panic and never block past
// the context; a source that cannot read GPUs says why in Unavailable.
type GPUSource interface {
	Sample(ctx context.Context) GPUSnapshot
	Close() error
}

// GPUSnapshot is one reading of all local GPUs.
type GPUSnapshot struct {
	Time        time.Time
	Source      string // "NVML (driver 550.54.15)", "simulated"
	Simulated   bool
	Unavailable string // why no GPU could be read ("NVML unavailable: libnvidia-ml.so.1 not found"), or ""
	GPUs        []GPU
	Events      []GPUEvent // XID and other events since the last reading
}

// GPU is one device. Numbers are NaN when the driver cannot tell (not
// supported, no permission, older driver); never zero for "unknown".
type GPU struct {
	Index           int
	Name, UUID      string
	PCIBusID        string
	UtilGPU         float64 // percent
	UtilMem         float64 // percent of time memory was read or written
	MemUsed         float64 // bytes
	MemTotal        float64 // bytes
	TempC           float64
	TempSlowdownC   float64 // threshold at which the GPU slows down
	PowerW          float64
	PowerLimitW     float64 // enforced limit
	SMClockMHz      float64
	MemClockMHz     float64
	ClockEvents     []string // active throttle / clock-event reasons in words
	ECCUncorrected  float64  // volatile uncorrected ECC errors
	RetiredPages    float64  // pending + retired pages (pre-Ampere) or remapped rows (Ampere+)
	RemapPending    bool     // a row remap or page retirement waits for a reset
	PCIeTxBps       float64  // bytes/s
	PCIeRxBps       float64
	MIG             Tri
	Processes       []GPUProcess
	Problem         string // a per-device failure ("GPU has fallen off the bus"), sanitized
	FieldsMissing   []string
	Throttled       bool // a performance-relevant clock event is active (thermal, power, hw slowdown)
	SimulatedReason string
}

// GPUProcess is a process holding memory on a GPU.
type GPUProcess struct {
	PID       int
	Name      string
	UsedBytes float64 // NaN when the driver does not report it (some containers)
}

// GPUEvent is an event the driver reported (XID errors).
type GPUEvent struct {
	Time  time.Time
	GPU   int
	XID   int
	Text  string
	Level string // "critical" / "warning" / "info"
}
