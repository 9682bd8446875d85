//go:build !cgo

package nvml

import "github.com/vtop-dev/vtop/sources"

// CompiledOut is the state a build without cgo reports.
const CompiledOut = "NVML compiled out (built without cgo)"

// Open returns a source that reports NVML as compiled out: go-nvml needs
// cgo, and this binary was built with CGO_ENABLED=0.
func Open(o Options) sources.GPUSource {
	o.defaults()
	return sources.UnavailableGPU{Reason: CompiledOut, Clock: o.Clock}
}
