//go:build cgo

package nvml

import "github.com/NVIDIA/go-nvml/pkg/nvml"

// call is one NVML entry point vtop uses. Calling a symbol the loaded
// driver lacks jumps to nowhere and kills the process, so each is looked up
// once after Init and skipped when absent.
type call uint8

const (
	cName call = iota
	cUUID
	cPCI
	cUtil
	cMemV1
	cMemV2
	cTemp
	cTempThreshold
	cPower
	cPowerLimit
	cClock
	cClockEvents     // R535+ name
	cThrottleReasons // the older name of the same call
	cECC
	cRemappedRows
	cRetiredPages
	cRetiredPending
	cPCIe
	cMIG
	cCompute
	cGraphics
	cEventCreate
	cEventSupported
	cEventRegister
	cEventWait
	cEventFree
	numCalls
)

// symbols lists, per call, the C symbols go-nvml may bind it to; any one
// present is enough (go-nvml picks the newest version the library has).
var symbols = [numCalls][]string{
	cName:            {"nvmlDeviceGetName"},
	cUUID:            {"nvmlDeviceGetUUID"},
	cPCI:             {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"},
	cUtil:            {"nvmlDeviceGetUtilizationRates"},
	cMemV1:           {"nvmlDeviceGetMemoryInfo"},
	cMemV2:           {"nvmlDeviceGetMemoryInfo_v2"},
	cTemp:            {"nvmlDeviceGetTemperature"},
	cTempThreshold:   {"nvmlDeviceGetTemperatureThreshold"},
	cPower:           {"nvmlDeviceGetPowerUsage"},
	cPowerLimit:      {"nvmlDeviceGetEnforcedPowerLimit"},
	cClock:           {"nvmlDeviceGetClockInfo"},
	cClockEvents:     {"nvmlDeviceGetCurrentClocksEventReasons"},
	cThrottleReasons: {"nvmlDeviceGetCurrentClocksThrottleReasons"},
	cECC:             {"nvmlDeviceGetTotalEccErrors"},
	cRemappedRows:    {"nvmlDeviceGetRemappedRows"},
	cRetiredPages:    {"nvmlDeviceGetRetiredPages"},
	cRetiredPending:  {"nvmlDeviceGetRetiredPagesPendingStatus"},
	cPCIe:            {"nvmlDeviceGetPcieThroughput"},
	cMIG:             {"nvmlDeviceGetMigMode"},
	cCompute:         {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses"},
	cGraphics:        {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2", "nvmlDeviceGetGraphicsRunningProcesses"},
	cEventCreate:     {"nvmlEventSetCreate"},
	cEventSupported:  {"nvmlDeviceGetSupportedEventTypes"},
	cEventRegister:   {"nvmlDeviceRegisterEvents"},
	cEventWait:       {"nvmlEventSetWait_v2", "nvmlEventSetWait"},
	cEventFree:       {"nvmlEventSetFree"},
}

// coreSymbols are needed to read anything at all; a library without one
// of them is reported as too old rather than half-used.
var coreSymbols = [][]string{
	{"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"},
	{"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"},
	{"nvmlSystemGetDriverVersion"},
	{"nvmlShutdown"},
}

// lookup reports whether any of names resolves in the loaded library.
func lookup(ext nvml.ExtendedInterface, names []string) bool {
	for _, n := range names {
		if ext.LookupSymbol(n) == nil {
			return true
		}
	}
	return false
}

// resolve looks every call up once.
func resolve(ext nvml.ExtendedInterface) (have [numCalls]bool, missingCore string) {
	for _, names := range coreSymbols {
		if !lookup(ext, names) {
			return have, names[len(names)-1]
		}
	}
	for c := range have {
		have[c] = lookup(ext, symbols[c])
	}
	return have, ""
}
