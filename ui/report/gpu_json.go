package report

import (
	"math"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/internal/jsonsplice"
	"github.com/vtop-dev/vtop/sources"
)

// JSONGPUStatus says where the GPU readings come from, or why there are none.
type JSONGPUStatus struct {
	Source      string         `json:"source"`
	Simulated   bool           `json:"simulated"`
	Available   bool           `json:"available"`
	Unavailable string         `json:"unavailable,omitempty"` // "NVML unavailable: libnvidia-ml.so.1 not found"
	ReadAt      *time.Time     `json:"read_at"`
	Notes       []string       `json:"notes"`
	Events      []JSONGPUEvent `json:"xid_events"` // within the XID retention, oldest first
}

// JSONGPUEvent is one XID with what it calls for.
type JSONGPUEvent struct {
	Time   time.Time `json:"time"`
	GPU    int       `json:"gpu"`
	XID    int       `json:"xid"`
	Text   string    `json:"text"`
	Level  string    `json:"level"`  // critical, warning, info
	Action string    `json:"action"` // watch, restart, reset, reboot
	Advice string    `json:"advice"`
}

// JSONGPU is one device. Its numbers are sources.GPUFields, written by
// their JSON keys after pci_bus_id (Nums, indexed like the table).
// Unknown numbers are null.
type JSONGPU struct {
	Index          int              `json:"index"` // on its host, as nvidia-smi -i and DCGM's gpu label
	Host           string           `json:"host,omitempty"`
	MIGProfile     string           `json:"mig_profile,omitempty"`
	Name           string           `json:"name"`
	UUID           string           `json:"uuid"`
	PCIBusID       string           `json:"pci_bus_id"`
	Nums           []Num            `json:"-"`
	ClockEvents    []string         `json:"clock_events"`
	ClockEventBits uint64           `json:"clock_event_bits"`
	Throttled      bool             `json:"throttled"`
	ThrottledSince *time.Time       `json:"throttled_since"`
	Stale          bool             `json:"stale"`
	RemapPending   bool             `json:"remap_pending"`
	RemapFailed    bool             `json:"remap_failed"`
	MIG            *bool            `json:"mig_mode"`
	Processes      []JSONGPUProcess `json:"processes"`
	Problem        string           `json:"problem,omitempty"`
	FieldsMissing  []string         `json:"fields_missing"`
}

// MarshalJSON writes the members with the table's numbers before
// clock_events (always written).
func (j JSONGPU) MarshalJSON() ([]byte, error) {
	type members JSONGPU
	b, err := jsonc.Marshal(members(j))
	if err != nil {
		return nil, err
	}
	return jsonsplice.Insert(b, len(sources.GPUFields), func(dst []byte, i int) []byte {
		v := Num(math.NaN())
		if i < len(j.Nums) {
			v = j.Nums[i]
		}
		n, _ := v.MarshalJSON()
		return jsonsplice.Member(dst, sources.GPUFields[i].JSON, n)
	}, "clock_events"), nil
}

// JSONGPUProcess is a process holding GPU memory.
type JSONGPUProcess struct {
	PID       int    `json:"pid"`
	Name      string `json:"name"`
	UsedBytes Num    `json:"used_bytes"`
}

// JSONEndpointGPU is an endpoint's share of the local GPUs.
type JSONEndpointGPU struct {
	GPUs        []int  `json:"gpus"` // NVML indexes
	MemoryBytes Num    `json:"memory_bytes"`
	UtilPercent Num    `json:"utilization_percent"`
	Root        *int   `json:"root_pid"`
	RootName    string `json:"root_name,omitempty"`
	PIDs        []int  `json:"pids"`
	Note        string `json:"note,omitempty"`
}

func triPtr(t sources.Tri) *bool {
	if t == sources.TriUnknown {
		return nil
	}
	v := t == sources.TriYes
	return &v
}

// GPUJSON converts the frame's GPU side.
func GPUJSON(fr *diagnose.Frame) (JSONGPUStatus, []JSONGPU) {
	g := &fr.GPU
	st := JSONGPUStatus{Source: g.Source, Simulated: g.Simulated, Unavailable: g.Unavailable, ReadAt: tptr(g.Time),
		Available: g.Unavailable == "" && !g.Time.IsZero(), Notes: orEmpty(g.Notes), Events: []JSONGPUEvent{}}
	if st.Unavailable == "" && g.Time.IsZero() {
		st.Unavailable = "not read"
	}
	for _, ev := range fr.GPUEvents {
		x := sources.LookupXID(ev.XID)
		st.Events = append(st.Events, JSONGPUEvent{Time: ev.Time.UTC(), GPU: ev.GPU, XID: ev.XID, Text: ev.Text,
			Level: ev.Level, Action: x.Action.String(), Advice: x.Action.Advice()})
	}
	gpus := make([]JSONGPU, 0, len(g.GPUs))
	for i := range g.GPUs {
		d := &g.GPUs[i]
		j := JSONGPU{Index: d.Index, Host: d.Host, MIGProfile: d.MIGProfile, Name: d.Name, UUID: d.UUID, PCIBusID: d.PCIBusID, ClockEvents: orEmpty(d.ClockEvents),
			ClockEventBits: uint64(d.ClockEventBits), Throttled: d.Throttled, Stale: d.Stale, RemapPending: d.RemapPending, RemapFailed: d.RemapFailed,
			MIG: triPtr(d.MIG), Processes: []JSONGPUProcess{}, Problem: d.Problem, FieldsMissing: orEmpty(d.FieldsMissing)}
		for k := range sources.GPUFields {
			j.Nums = append(j.Nums, Num(*sources.GPUFields[k].At(d)))
		}
		if i < len(fr.GPUSeries) {
			j.ThrottledSince = tptr(fr.GPUSeries[i].ThrottledSince)
		}
		for _, p := range d.Processes {
			j.Processes = append(j.Processes, JSONGPUProcess{PID: p.PID, Name: p.Name, UsedBytes: Num(p.UsedBytes)})
		}
		if d.Host != "" {
			j.Index = d.HostIndex
		}
		gpus = append(gpus, j)
	}
	return st, gpus
}

// EndpointGPUJSON converts an endpoint's GPU share; nil when no join was made.
func EndpointGPUJSON(fr *diagnose.Frame, e *diagnose.EndpointView) *JSONEndpointGPU {
	g := &e.GPU
	if g.Note == "" && len(g.GPUs) == 0 && g.Root == 0 {
		return nil
	}
	j := &JSONEndpointGPU{GPUs: []int{}, MemoryBytes: Num(g.MemBytes), UtilPercent: Num(g.UtilGPU), RootName: g.RootName,
		PIDs: g.PIDs, Note: g.Note}
	if j.PIDs == nil {
		j.PIDs = []int{}
	}
	for _, gi := range g.GPUs {
		j.GPUs = append(j.GPUs, fr.GPU.GPUs[gi].Index)
	}
	if g.Root != 0 {
		r := g.Root
		j.Root = &r
	}
	return j
}
