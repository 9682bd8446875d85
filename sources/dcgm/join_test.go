package dcgm

import (
	"slices"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

func dev(host, pod, uuid string) Device {
	return Device{GPU: sources.GPU{UUID: uuid}, Host: host, Namespace: "llm", Pod: pod}
}

// A GPU is a replica's only when attributed to it: by its pod, or by a host
// that serves that replica alone. On a host shared by replicas that carry
// no pod, the exporter's GPUs are kept (node-level) but held by none.
func TestSnapshotAttribution(t *testing.T) {
	f := Fleet{Devices: []Device{
		dev("node-a", "exporter-labelled-0", "GPU-a0"), // pod labels the replicas lack
		dev("node-a", "exporter-labelled-1", "GPU-a1"),
		dev("node-b", "", "GPU-b0"), // a host serving one replica
		dev("node-c", "vllm-7", "GPU-c0"),
		dev("node-c", "someone-else", "GPU-c1"), // another workload's: not shown
		dev("node-d", "", "GPU-d0"),             // no replica here at all
	}}
	holders := []Holder{
		{Host: "node-a"}, {Host: "node-a.cluster.local"}, {Host: "node-a"},
		{Host: "node-b"},
		{Namespace: "llm", Pod: "vllm-7", Host: "node-c"},
	}
	snap, held := f.Snapshot(time.Unix(0, 0), "test", holders)
	var shown []string
	for _, g := range snap.GPUs {
		shown = append(shown, g.UUID)
	}
	if want := []string{"GPU-a0", "GPU-a1", "GPU-b0", "GPU-c0"}; !slices.Equal(shown, want) {
		t.Errorf("shown %v, want %v", shown, want)
	}
	want := [][]string{nil, nil, nil, {"GPU-b0"}, {"GPU-c0"}}
	for i := range holders {
		if !slices.Equal(held[i], want[i]) {
			t.Errorf("holder %d (%+v) holds %v, want %v", i, holders[i], held[i], want[i])
		}
	}

	// The same node serving one replica: its GPUs are that replica's.
	_, held = f.Snapshot(time.Unix(0, 0), "test", holders[:1])
	if !slices.Equal(held[0], []string{"GPU-a0", "GPU-a1"}) {
		t.Errorf("sole replica on node-a holds %v", held[0])
	}
}
