package sources

import (
	"context"
	"slices"
	"strconv"
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
	// Notes name conditions that limit what could be read on this host
	// ("XID events: not supported", processes in another PID namespace).
	Notes []string
}

// PIDs lists the processes holding memory on any GPU, sorted, once each.
func (s *GPUSnapshot) PIDs() []int {
	var out []int
	for i := range s.GPUs {
		for _, p := range s.GPUs[i].Processes {
			out = append(out, p.PID)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// GPU is one device. Numbers are NaN when the driver cannot tell (not
// supported, no permission, older driver); never zero for "unknown".
type GPU struct {
	Index      int // vtop's: the reading's order (NVML's index for local GPUs)
	Name, UUID string
	PCIBusID   string
	// Where the device is, as nvidia-smi and DCGM name it, for GPUs read
	// from elsewhere (dcgm-exporter): its host, its index on that host
	// (DCGM's gpu label, nvidia-smi -i) and a MIG instance's profile.
	Host            string
	HostIndex       int
	MIGProfile      string
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
	ClockEvents     []string   // active throttle / clock-event reasons in words
	ClockEventBits  ClockEvent // the same reasons as NVML's bit mask, for rules
	ECCUncorrected  float64    // volatile uncorrected ECC errors
	RetiredPages    float64    // pending + retired pages (pre-Ampere) or remapped rows (Ampere+)
	RemapPending    bool       // a row remap or page retirement waits for a reset
	RemapFailed     bool       // row remapping failed: the GPU has no spare rows left
	PCIeTxBps       float64    // bytes/s
	PCIeRxBps       float64
	MIG             Tri
	Processes       []GPUProcess
	Problem         string   // a per-device failure ("GPU has fallen off the bus"), sanitized
	FieldsMissing   []string // fields not read, with why: "PCIe throughput (not supported)"
	Throttled       bool     // a performance-relevant clock event is active (thermal, power, hw slowdown)
	SimulatedReason string

	// Stale: the source that reads this device fails now, and these are
	// its last values as read then (a dcgm-exporter not answering). It is
	// shown dimmed, never down, and raises no finding.
	Stale bool
}

// Label names the device as nvidia-smi and DCGM do: "GPU 5" (its index on
// its host), "GPU 3 MIG 1g.10gb" for a MIG instance. Local GPUs are NVML's
// index, read from elsewhere the host's own.
func (g *GPU) Label() string {
	i := g.Index
	if g.Host != "" {
		i = g.HostIndex
	}
	s := "GPU " + strconv.Itoa(i)
	if g.MIGProfile != "" {
		s += " MIG " + g.MIGProfile
	}
	return s
}

// Where is Label with the host when the device is not this machine's:
// "GPU 5 on gpu-node-2".
func (g *GPU) Where() string {
	if g.Host == "" {
		return g.Label()
	}
	return g.Label() + " on " + g.Host
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

// NoteNotLocal is the join note of a target on another host: its GPUs
// cannot be read from here.
const NoteNotLocal = "not on this host"

// ProcTree is the process tree serving one local endpoint: the process
// holding its listening socket and every descendant (vLLM's engine-core and
// worker processes), joined to GPU processes by PID.
type ProcTree struct {
	Root     int    // topmost process holding the listening socket; 0 when none was found
	RootName string // its comm name
	PIDs     []int  // Root and its descendants, sorted
	Note     string // why no tree was found ("no process listens on port 8000 here")
	// GPUs are the devices (GPU.UUID) the endpoint holds when that is known
	// from elsewhere than its processes: dcgm-exporter's pod or host labels
	// for a remote endpoint. Their whole used memory counts as its.
	GPUs []string
	// MemLimit is the memory the endpoint's processes can use, in bytes,
	// when local: their cgroup's memory.max (the tightest on its path),
	// else the host's MemTotal. 0: unknown (remote, or unreadable).
	MemLimit     float64
	MemLimitFrom string // where MemLimit came from ("cgroup memory limit", "host MemTotal")
}

// UnavailableGPU is a GPUSource that reads nothing and says why: NVML
// missing or compiled out, or GPUs turned off with --gpu none.
type UnavailableGPU struct {
	Reason string
	Clock  func() time.Time // time.Now when nil
}

// Sample implements GPUSource.
func (u UnavailableGPU) Sample(context.Context) GPUSnapshot {
	now := time.Now
	if u.Clock != nil {
		now = u.Clock
	}
	return GPUSnapshot{Time: now(), Unavailable: u.Reason}
}

// Close implements GPUSource.
func (UnavailableGPU) Close() error { return nil }
