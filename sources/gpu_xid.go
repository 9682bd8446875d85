package sources

import (
	"fmt"
	"sort"
	"time"
)

// XIDAction is what an XID calls for, from least to most disruptive.
type XIDAction uint8

const (
	XIDWatch      XIDAction = iota // informational: act only when it repeats
	XIDRestartApp                  // the process on the GPU faulted or was stopped: restart the server
	XIDResetGPU                    // drain the GPU's endpoints, then reset the GPU
	XIDReboot                      // drain the node and reboot (power-cycle) it
)

func (a XIDAction) String() string {
	return [...]string{"watch", "restart", "reset", "reboot"}[a]
}

// Advice is the action as an on-call instruction.
func (a XIDAction) Advice() string {
	return [...]string{
		"watch for repeats; nothing to do unless it recurs",
		"restart the vLLM server on this GPU; if it recurs with unchanged code, reset the GPU",
		"drain the endpoints on this GPU, then reset it (nvidia-smi -r) or reboot; replace the GPU if it recurs",
		"drain the node and reboot (power-cycle) it; replace the GPU if it recurs",
	}[a]
}

// XIDInfo is what vtop knows about one XID code.
type XIDInfo struct {
	XID    int
	Name   string
	Level  string // "critical", "warning" or "info", as GPUEvent.Level
	Action XIDAction
}

// xids holds the codes an inference node meets in practice, after NVIDIA's
// XID catalog; the critical ones are those that take a GPU or its memory out.
var xids = map[int]XIDInfo{
	8:   {8, "GPU stopped processing (idle timeout)", "warning", XIDRestartApp},
	13:  {13, "graphics engine exception (usually an application or CUDA fault)", "warning", XIDRestartApp},
	31:  {31, "GPU memory page fault (illegal address in an application)", "warning", XIDRestartApp},
	43:  {43, "GPU stopped processing (an application channel was reset)", "warning", XIDRestartApp},
	45:  {45, "preemptive cleanup after an earlier error", "info", XIDWatch},
	48:  {48, "double-bit ECC error (uncorrectable memory error)", "critical", XIDResetGPU},
	61:  {61, "internal micro-controller breakpoint", "critical", XIDResetGPU},
	62:  {62, "internal micro-controller halt", "critical", XIDResetGPU},
	63:  {63, "ECC page retirement or row remap recorded; it takes effect after a GPU reset", "critical", XIDResetGPU},
	64:  {64, "ECC page retirement or row remap failed", "critical", XIDResetGPU},
	68:  {68, "video decoder exception", "warning", XIDRestartApp},
	69:  {69, "graphics engine class error", "warning", XIDRestartApp},
	74:  {74, "NVLink error", "critical", XIDResetGPU},
	79:  {79, "GPU has fallen off the bus", "critical", XIDReboot},
	92:  {92, "high single-bit ECC error rate", "warning", XIDWatch},
	94:  {94, "contained uncorrectable ECC error: the process using that memory was stopped", "critical", XIDRestartApp},
	95:  {95, "uncontained uncorrectable ECC error: every process on the GPU is affected", "critical", XIDResetGPU},
	109: {109, "context switch timeout", "warning", XIDRestartApp},
	119: {119, "GSP firmware RPC timeout", "critical", XIDResetGPU},
	120: {120, "GSP firmware error", "critical", XIDResetGPU},
	140: {140, "unrecovered ECC error", "critical", XIDResetGPU},
	154: {154, "GPU recovery action changed (the kernel log names the action)", "critical", XIDResetGPU},
}

// LookupXID describes an XID; codes not in the table are warnings to look up.
func LookupXID(xid int) XIDInfo {
	if x, ok := xids[xid]; ok {
		return x
	}
	return XIDInfo{XID: xid, Name: fmt.Sprintf("XID %d (look it up in NVIDIA's XID catalog)", xid), Level: "warning", Action: XIDWatch}
}

// KnownXIDs lists the table, by code (for `vtop rules` and the docs).
func KnownXIDs() []XIDInfo {
	out := make([]XIDInfo, 0, len(xids))
	for _, x := range xids {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].XID < out[j].XID })
	return out
}

// XIDEvent builds the event for an XID seen on GPU gpu at t.
func XIDEvent(t time.Time, gpu, xid int) GPUEvent {
	x := LookupXID(xid)
	return GPUEvent{Time: t, GPU: gpu, XID: xid, Text: x.Name, Level: x.Level}
}
