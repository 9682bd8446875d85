package sources

import "testing"

// A device is named as nvidia-smi and DCGM name it: a local GPU by NVML's
// index, one from a dcgm-exporter by its index on its host, a MIG
// instance with its profile.
func TestGPULabel(t *testing.T) {
	for _, c := range []struct {
		g            GPU
		label, where string
	}{
		{GPU{Index: 4}, "GPU 4", "GPU 4"},
		{GPU{Index: 0, Host: "gpu-node-2", HostIndex: 5}, "GPU 5", "GPU 5 on gpu-node-2"},
		{GPU{Index: 1, Host: "gpu-node-2", HostIndex: 3, MIGProfile: "1g.10gb"}, "GPU 3 MIG 1g.10gb", "GPU 3 MIG 1g.10gb on gpu-node-2"},
	} {
		if got := c.g.Label(); got != c.label {
			t.Errorf("%+v: label %q, want %q", c.g, got, c.label)
		}
		if got := c.g.Where(); got != c.where {
			t.Errorf("%+v: where %q, want %q", c.g, got, c.where)
		}
	}
}
