package dcgm

import (
	"strconv"
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
// devices some holder holds, so a fleet narrowed by --selector does not
// show the whole cluster's GPUs.
func (f *Fleet) Snapshot(t time.Time, source string, holders []Holder) (sources.GPUSnapshot, [][]string) {
	held := make([][]string, len(holders))
	keep := map[int]bool{}
	for hi, h := range holders {
		for di := range f.Devices {
			if f.holds(&f.Devices[di], h) {
				keep[di] = true
				held[hi] = append(held[hi], uuidOf(&f.Devices[di]))
			}
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
		g.Index = len(snap.GPUs)
		g.Name = d.Host + " GPU " + itoa(d.Index) + " " + d.Name
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

// holds joins by pod when both sides know one, else by host: the node name
// the exporter reports or the exporter's own address (a short name
// matches its fully qualified one). Without pods, every replica on a host
// holds every GPU of that host.
func (f *Fleet) holds(d *Device, h Holder) bool {
	if h.Pod != "" && d.Pod != "" {
		return d.Pod == h.Pod && (h.Namespace == "" || d.Namespace == "" || d.Namespace == h.Namespace)
	}
	if h.Pod != "" {
		return false
	}
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

func itoa(i int) string { return strconv.Itoa(i) }
