//go:build cgo

package nvml

import (
	"math"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// pcieLoop measures PCIe throughput in the background: the driver counts
// bytes over 20 ms per call, 40 ms per GPU, far too slow for Sample.
func (s *Source) pcieLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.o.PCIeEvery)
	defer t.Stop()
	for {
		s.readPCIe()
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// readPCIe measures every GPU once.
func (s *Source) readPCIe() {
	if !s.have[cPCIe] {
		return
	}
	for _, d := range s.devs {
		select {
		case <-s.stop:
			return
		default:
		}
		s.mu.Lock()
		skip := d.h == nil || d.problem != "" || d.pcieSkip != ""
		s.mu.Unlock()
		if skip {
			continue
		}
		tx, ret := d.h.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES)
		var rx uint32
		if ret == nvml.SUCCESS {
			rx, ret = d.h.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES)
		}
		s.mu.Lock()
		switch ret {
		case nvml.SUCCESS:
			d.pcieTx, d.pcieRx = float64(tx)*1024, float64(rx)*1024 // NVML reports KiB/s
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_NO_PERMISSION:
			d.pcieSkip = retText(ret)
		case nvml.ERROR_GPU_IS_LOST:
			d.problem = problemLost
		case nvml.ERROR_RESET_REQUIRED:
			d.problem = problemReset
		default:
			d.pcieTx, d.pcieRx = math.NaN(), math.NaN()
		}
		s.mu.Unlock()
	}
}
