package app

import (
	"fmt"

	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/nvml"
)

// openGPUSource picks the GPU source for --gpu. "nvml" insists: NVML that
// cannot start is an error, where "auto" shows the reason in the GPU panel.
func openGPUSource(c *Config) (sources.GPUSource, error) {
	switch c.GPU {
	case "none":
		return sources.UnavailableGPU{Reason: "GPU reading off (--gpu none)"}, nil
	case "auto", "nvml":
		src := nvml.Open(nvml.Options{PCIeEvery: c.Interval})
		if u, ok := src.(sources.UnavailableGPU); ok && c.GPU == "nvml" {
			return nil, fmt.Errorf("--gpu nvml: %s", u.Reason)
		}
		return src, nil
	}
	return nil, fmt.Errorf("--gpu must be auto, nvml or none, not %q", c.GPU)
}
