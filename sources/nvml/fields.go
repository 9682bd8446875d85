//go:build cgo

package nvml

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// field is one thing the GPU panel shows; a field can need several calls.
type field uint8

const (
	fUtil field = iota
	fMem
	fTemp
	fTempSlowdown
	fPower
	fPowerLimit
	fSMClock
	fMemClock
	fClockEvents
	fECC
	fRetired
	fPCIe
	fMIG
	fProcs
	numFields
)

var fieldNames = [numFields]string{
	fUtil:         "utilization",
	fMem:          "memory",
	fTemp:         "temperature",
	fTempSlowdown: "slowdown temperature",
	fPower:        "power",
	fPowerLimit:   "power limit",
	fSMClock:      "SM clock",
	fMemClock:     "memory clock",
	fClockEvents:  "clock events",
	fECC:          "uncorrected ECC errors",
	fRetired:      "retired pages / remapped rows",
	fPCIe:         "PCIe throughput",
	fMIG:          "MIG mode",
	fProcs:        "processes",
}

// Device-level problems: once seen, the device is not called again.
const (
	problemLost  = "GPU has fallen off the bus (NVML: GPU is lost): drain its endpoints and reset the GPU or reboot"
	problemReset = "GPU needs a reset (NVML: reset required): drain its endpoints and reset it"
)

// retText names an NVML return code in words without calling into the
// library (its error-string function is unsafe once Init has failed).
func retText(r nvml.Return) string {
	switch r {
	case nvml.ERROR_NOT_SUPPORTED:
		return "not supported"
	case nvml.ERROR_NO_PERMISSION:
		return "no permission"
	case nvml.ERROR_GPU_IS_LOST:
		return "GPU is lost"
	case nvml.ERROR_RESET_REQUIRED:
		return "GPU reset required"
	case nvml.ERROR_TIMEOUT:
		return "timeout"
	case nvml.ERROR_UNINITIALIZED:
		return "not initialized"
	case nvml.ERROR_FUNCTION_NOT_FOUND:
		return "function not found in the driver"
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "library not found"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "NVIDIA driver not loaded"
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return "NVML library and kernel driver versions differ (reload the nvidia module or reboot)"
	case nvml.ERROR_INSUFFICIENT_POWER:
		return "insufficient power (check the GPU's power cables)"
	case nvml.ERROR_IRQ_ISSUE:
		return "interrupt problem with the GPU"
	case nvml.ERROR_CORRUPTED_INFOROM:
		return "corrupted infoROM"
	case nvml.ERROR_ARGUMENT_VERSION_MISMATCH:
		return "argument version mismatch"
	case nvml.ERROR_NOT_FOUND:
		return "not found"
	case nvml.ERROR_NO_DATA:
		return "no data"
	case nvml.ERROR_INVALID_ARGUMENT:
		return "invalid argument"
	case nvml.ERROR_UNKNOWN:
		return "unknown error"
	}
	return fmt.Sprintf("NVML error %d", int32(r))
}
