package main

import (
	"fmt"

	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/nvml"
)

// openGPUSource picks the GPU source for --gpu. "nvml" insists: NVML that
// cannot start is an error, where "auto" shows the reason in the GPU panel.
func openGPUSource(o *options) (sources.GPUSource, error) {
	switch o.gpu {
	case "none":
		return sources.UnavailableGPU{Reason: "GPU reading off (--gpu none)"}, nil
	case "auto", "nvml":
		src := nvml.Open(nvml.Options{PCIeEvery: o.interval})
		if u, ok := src.(sources.UnavailableGPU); ok && o.gpu == "nvml" {
			return nil, fmt.Errorf("--gpu nvml: %s", u.Reason)
		}
		return src, nil
	}
	return nil, fmt.Errorf("--gpu must be auto, nvml or none, not %q", o.gpu)
}
