package dcgm

import (
	"strings"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// Holder is a vLLM endpoint to join to the GPUs: by its Kubernetes pod
// when it has one, else by host.
type Holder struct {
	Namespace, Pod string
	Host           string
}

// Fleet is one reading of many nodes' GPUs, ready for the engine: devices
// numbered fleet-wide, named with their host, MIG instances told apart.
type Fleet struct {
	Devices []Device
	Events  []sources.GPUEvent
}

// Snapshot is the reading as the GPU panel and rules take it: only the
// devices on some holder's pod or host, so a fleet narrowed by --selector
// does not show the whole cluster's GPUs. held lists, per holder, the
// devices attributed to it: by its pod, or by its host when that host
// serves it alone. A device on a host shared by several replicas, none
// known to hold it by pod, is kept but held by none: its findings are the
// node's, never one replica's cause, and no replica's utilization
// averages it in.
func (f *Fleet) Snapshot(t time.Time, source string, holders []Holder) (sources.GPUSnapshot, [][]string) {
	held := make([][]string, len(holders))
	keep := map[int]bool{}
	var onHost []int
	for di := range f.Devices {
		d := &f.Devices[di]
		byPod := false
		onHost = onHost[:0]
		for hi, h := range holders {
			switch {
			case f.podHolds(d, h):
				byPod = true
				keep[di] = true
				held[hi] = append(held[hi], uuidOf(d))
			case (h.Pod == "" || d.Pod == "") && f.onHost(d, h):
				// On its host, and no pod label says another workload's.
				keep[di] = true
				onHost = append(onHost, hi)
			}
		}
		// The host fallback attributes only where it cannot be wrong:
		// one replica on the host, which no pod label contradicts.
		if !byPod && len(onHost) == 1 && hostReplicas(holders, d, f) == 1 {
			held[onHost[0]] = append(held[onHost[0]], uuidOf(d))
		}
	}
	snap := sources.GPUSnapshot{Time: t, Source: source}
	newIndex := map[int]int{}
	for di := range f.Devices {
		if !keep[di] {
			continue
		}
		d := f.Devices[di]
		g := d.GPU
		g.UUID = uuidOf(&d)
		// vtop's index is the reading's order; the device keeps its
		// host and its index there, as nvidia-smi and DCGM name it.
		g.HostIndex, g.Host = d.Index, d.Host
		g.Index = len(snap.GPUs)
		newIndex[di] = g.Index
		snap.GPUs = append(snap.GPUs, g)
	}
	for _, e := range f.Events {
		if i, ok := newIndex[e.GPU]; ok {
			e.GPU = i
			snap.Events = append(snap.Events, e)
		}
	}
	return snap, held
}

// uuidOf keys a device for the engine: a MIG instance shares its parent's
// UUID, so its instance ID is added.
func uuidOf(d *Device) string {
	if d.Instance != "" {
		return d.UUID + "/" + d.Instance
	}
	return d.UUID
}

// podHolds joins by pod when both sides know one.
func (f *Fleet) podHolds(d *Device, h Holder) bool {
	return h.Pod != "" && d.Pod != "" && d.Pod == h.Pod && (h.Namespace == "" || d.Namespace == "" || d.Namespace == h.Namespace)
}

// onHost says the device is on the holder's host: the node name the
// exporter reports or the exporter's own address (a short name matches
// its fully qualified one).
func (f *Fleet) onHost(d *Device, h Holder) bool {
	return h.Host != "" && (sameHost(d.Host, h.Host) || sameHost(d.Exporter, h.Host))
}

func sameHost(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	if a == b {
		return true
	}
	short := func(s string) string {
		if i := strings.IndexByte(s, '.'); i > 0 && (s[0] < '0' || s[0] > '9') {
			return s[:i]
		}
		return s
	}
	return short(a) == short(b)
}

// hostReplicas counts the holders on the device's host, whatever their
// pods: the host fallback needs the host to serve one replica.
func hostReplicas(holders []Holder, d *Device, f *Fleet) int {
	n := 0
	for _, h := range holders {
		if f.onHost(d, h) {
			n++
		}
	}
	return n
}
