package record

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/vtop-dev/vtop/internal/jsonsplice"
	"github.com/vtop-dev/vtop/sources"
)

// The GPU record is JSON, one field per line (so the line delta keeps only
// what changed), in these wire structs: the recording's own schema, which
// does not move when sources.GPU gains a field. Unknown numbers are null.

type wireSnapshot struct {
	Time        time.Time   `json:"time"`
	Source      string      `json:"source,omitempty"`
	Simulated   bool        `json:"simulated,omitempty"`
	Unavailable string      `json:"unavailable,omitempty"`
	GPUs        []wireGPU   `json:"gpus,omitempty"`
	Events      []wireEvent `json:"events,omitempty"`
	Notes       []string    `json:"notes,omitempty"`
}

// wireGPU is a device: its numbers are sources.GPUFields, read and
// written by their Wire keys (Nums, indexed like the table) between
// pci_bus_id and clock_events; the rest are its own members.
type wireGPU struct {
	Index           int           `json:"index"`
	Name            string        `json:"name"`
	UUID            string        `json:"uuid"`
	PCIBusID        string        `json:"pci_bus_id"`
	Nums            []num         `json:"-"`
	ClockEvents     []string      `json:"clock_events,omitempty"`
	ClockEventBits  uint64        `json:"clock_event_bits"`
	RemapPending    bool          `json:"remap_pending,omitempty"`
	RemapFailed     bool          `json:"remap_failed,omitempty"`
	MIG             int8          `json:"mig"`
	Processes       []wireProcess `json:"processes,omitempty"`
	Problem         string        `json:"problem,omitempty"`
	FieldsMissing   []string      `json:"fields_missing,omitempty"`
	Throttled       bool          `json:"throttled,omitempty"`
	SimulatedReason string        `json:"simulated_reason,omitempty"`
	// Stale: its source failed at this reading and the values are the
	// last read; absent (not stale) in recordings made before it existed.
	Stale bool `json:"stale,omitempty"`
	// Where a device read from elsewhere is (dcgm-exporter): its host, its
	// index there and a MIG profile; absent for local GPUs.
	Host       string `json:"host,omitempty"`
	HostIndex  int    `json:"host_index,omitempty"`
	MIGProfile string `json:"mig_profile,omitempty"`
}

// MarshalJSON writes the members with the table's numbers after
// pci_bus_id, before clock_events or, when that is omitted,
// clock_event_bits.
func (g wireGPU) MarshalJSON() ([]byte, error) {
	type members wireGPU
	b, err := json.Marshal(members(g))
	if err != nil {
		return nil, err
	}
	return jsonsplice.Insert(b, len(sources.GPUFields), func(dst []byte, i int) []byte {
		v := num(math.NaN())
		if i < len(g.Nums) {
			v = g.Nums[i]
		}
		n, _ := v.MarshalJSON()
		return jsonsplice.Member(dst, sources.GPUFields[i].Wire, n)
	}, "clock_events", "clock_event_bits"), nil
}

// UnmarshalJSON reads the members, then each table number by its key; a
// key the recording lacks (a field added after it was made) is unknown.
func (g *wireGPU) UnmarshalJSON(b []byte) error {
	type members wireGPU
	if err := json.Unmarshal(b, (*members)(g)); err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	g.Nums = make([]num, len(sources.GPUFields))
	for i := range sources.GPUFields {
		g.Nums[i] = num(math.NaN())
		if r, ok := raw[sources.GPUFields[i].Wire]; ok {
			if err := g.Nums[i].UnmarshalJSON(r); err != nil {
				return fmt.Errorf("gpu %s: %v", sources.GPUFields[i].Wire, err)
			}
		}
	}
	return nil
}

type wireProcess struct {
	PID       int    `json:"pid"`
	Name      string `json:"name"`
	UsedBytes num    `json:"used_bytes"`
}

type wireEvent struct {
	Time  time.Time `json:"time"`
	GPU   int       `json:"gpu"`
	XID   int       `json:"xid"`
	Text  string    `json:"text"`
	Level string    `json:"level"`
}

type wireProcs struct {
	Target   int    `json:"target"`
	Root     int    `json:"root"`
	RootName string `json:"root_name,omitempty"`
	PIDs     []int  `json:"pids,omitempty"`
	Note     string `json:"note,omitempty"`
	// GPUs held by a remote endpoint (dcgm-exporter's pod or host join);
	// format 2.
	GPUs []string `json:"gpus,omitempty"`
	// The memory the local endpoint's processes can use (cgroup or host)
	// and where it came from; format 3. Absent: unknown.
	MemLimit     float64 `json:"mem_limit,omitempty"`
	MemLimitFrom string  `json:"mem_limit_from,omitempty"`
}

// num is a float64 whose NaN ("unknown") is JSON null and whose
// infinities are the strings "+Inf" and "-Inf".
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return []byte("null"), nil
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

func (n *num) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "null":
		*n = num(math.NaN())
		return nil
	case `"+Inf"`:
		*n = num(math.Inf(1))
		return nil
	case `"-Inf"`:
		*n = num(math.Inf(-1))
		return nil
	}
	var f float64
	err := json.Unmarshal(b, &f)
	*n = num(f)
	return err
}

func toWire(s *sources.GPUSnapshot) wireSnapshot {
	w := wireSnapshot{Time: s.Time, Source: s.Source, Simulated: s.Simulated, Unavailable: s.Unavailable, Notes: s.Notes}
	for _, g := range s.GPUs {
		wg := wireGPU{Index: g.Index, Name: g.Name, UUID: g.UUID, PCIBusID: g.PCIBusID, ClockEvents: g.ClockEvents,
			ClockEventBits: uint64(g.ClockEventBits), RemapPending: g.RemapPending, RemapFailed: g.RemapFailed,
			MIG: int8(g.MIG), Problem: g.Problem, FieldsMissing: g.FieldsMissing, Throttled: g.Throttled, SimulatedReason: g.SimulatedReason,
			Host: g.Host, HostIndex: g.HostIndex, MIGProfile: g.MIGProfile, Stale: g.Stale}
		for i := range sources.GPUFields {
			wg.Nums = append(wg.Nums, num(*sources.GPUFields[i].At(&g)))
		}
		for _, p := range g.Processes {
			wg.Processes = append(wg.Processes, wireProcess{PID: p.PID, Name: p.Name, UsedBytes: num(p.UsedBytes)})
		}
		w.GPUs = append(w.GPUs, wg)
	}
	for _, e := range s.Events {
		w.Events = append(w.Events, wireEvent{Time: e.Time, GPU: e.GPU, XID: e.XID, Text: e.Text, Level: e.Level})
	}
	return w
}

// Text from a recording is untrusted: every string is sanitized again, with
// the bounds ingest uses.
func san(s string) string { return sources.Sanitize(s, sources.MaxLabelLen) }

func sanAll(ss []string) []string {
	var out []string
	for _, s := range ss {
		out = append(out, san(s))
	}
	return out
}

func fromWire(w *wireSnapshot) sources.GPUSnapshot {
	s := sources.GPUSnapshot{Time: w.Time, Source: san(w.Source), Simulated: w.Simulated,
		Unavailable: san(w.Unavailable), Notes: sanAll(w.Notes)}
	for _, g := range w.GPUs {
		mig := sources.Tri(g.MIG)
		if mig < sources.TriUnknown || mig > sources.TriYes {
			mig = sources.TriUnknown
		}
		sg := sources.GPU{Index: g.Index, Name: san(g.Name), UUID: san(g.UUID), PCIBusID: san(g.PCIBusID),
			ClockEvents: sanAll(g.ClockEvents), ClockEventBits: sources.ClockEvent(g.ClockEventBits),
			RemapPending: g.RemapPending, RemapFailed: g.RemapFailed,
			MIG: mig, Problem: san(g.Problem), FieldsMissing: sanAll(g.FieldsMissing), Throttled: g.Throttled, SimulatedReason: san(g.SimulatedReason),
			Host: san(g.Host), HostIndex: g.HostIndex, MIGProfile: san(g.MIGProfile), Stale: g.Stale}
		sg.SetUnknown()
		for i := range min(len(g.Nums), len(sources.GPUFields)) {
			*sources.GPUFields[i].At(&sg) = float64(g.Nums[i])
		}
		for _, p := range g.Processes {
			sg.Processes = append(sg.Processes, sources.GPUProcess{PID: p.PID, Name: san(p.Name), UsedBytes: float64(p.UsedBytes)})
		}
		s.GPUs = append(s.GPUs, sg)
	}
	for _, e := range w.Events {
		s.Events = append(s.Events, sources.GPUEvent{Time: e.Time, GPU: e.GPU, XID: e.XID, Text: san(e.Text), Level: san(e.Level)})
	}
	return s
}
