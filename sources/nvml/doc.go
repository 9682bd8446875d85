// Package nvml reads the local NVIDIA GPUs through NVML (go-nvml, which
// dlopens libnvidia-ml.so.1 at run time) and implements sources.GPUSource.
//
// A node that is not what vtop expects never kills it: no driver, a driver
// older than a call, NOT_SUPPORTED, NO_PERMISSION, a GPU that falls off the
// bus, or a container without host PIDs each become a stated condition in
// the snapshot. Built without cgo, the package compiles to a source that
// says NVML was compiled out.
package nvml

import "time"

// Options configure the NVML source. The zero value reads the system
// library with the defaults.
type Options struct {
	LibraryPath string           // libnvidia-ml.so.1 when empty (the dynamic loader's search path)
	ProcRoot    string           // /proc when empty: process names and PID-namespace checks
	PCIeEvery   time.Duration    // how often PCIe throughput is read in the background (default 1 s)
	EventWait   time.Duration    // longest block in one XID wait; bounds Close (default 250 ms)
	Clock       func() time.Time // time.Now when nil
}

func (o *Options) defaults() {
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	if o.PCIeEvery <= 0 {
		o.PCIeEvery = time.Second
	}
	if o.EventWait <= 0 {
		o.EventWait = 250 * time.Millisecond
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
}
