package sources

import (
	"fmt"
	"math/bits"
)

// ClockEvent is a set of reasons the GPU runs below its maximum clocks, with
// NVML's bit values (nvmlClocksEventReasons, formerly "throttle reasons"), so
// a simulator and a real driver describe the same thing the same way.
type ClockEvent uint64

const (
	ClockIdle           ClockEvent = 0x1   // nothing to run
	ClockAppSetting     ClockEvent = 0x2   // application clocks set below maximum
	ClockSWPowerCap     ClockEvent = 0x4   // software power cap: drawing at the power limit
	ClockHWSlowdown     ClockEvent = 0x8   // hardware slowdown (thermal, power brake or a failing PSU)
	ClockSyncBoost      ClockEvent = 0x10  // held to the clocks of other GPUs in a sync-boost group
	ClockSWThermal      ClockEvent = 0x20  // software thermal slowdown: over the target temperature
	ClockHWThermal      ClockEvent = 0x40  // hardware thermal slowdown: too hot
	ClockHWPowerBrake   ClockEvent = 0x80  // hardware power brake asserted by the system
	ClockDisplaySetting ClockEvent = 0x100 // display clock setting

	// ClockThermal, ClockPower and ClockHardware group the reasons that cost
	// performance while work is queued; the others are configuration or idle.
	ClockThermal  = ClockSWThermal | ClockHWThermal
	ClockPower    = ClockSWPowerCap | ClockHWPowerBrake
	ClockHardware = ClockHWSlowdown | ClockHWThermal | ClockHWPowerBrake
	ClockThrottle = ClockThermal | ClockPower | ClockHardware
)

var clockWords = [...]struct {
	bit  ClockEvent
	word string
}{
	{ClockIdle, "idle"},
	{ClockAppSetting, "application clocks setting"},
	{ClockSWPowerCap, "power cap"},
	{ClockHWSlowdown, "hardware slowdown"},
	{ClockSyncBoost, "sync boost"},
	{ClockSWThermal, "thermal slowdown (software)"},
	{ClockHWThermal, "thermal slowdown (hardware)"},
	{ClockHWPowerBrake, "power brake (hardware)"},
	{ClockDisplaySetting, "display clock setting"},
}

// Words lists the active reasons in words, in bit order; bits this table
// does not know (a newer driver) are named by their value.
func (c ClockEvent) Words() []string {
	if c == 0 {
		return nil
	}
	out := make([]string, 0, bits.OnesCount64(uint64(c)))
	known := ClockEvent(0)
	for _, w := range clockWords {
		known |= w.bit
		if c&w.bit != 0 {
			out = append(out, w.word)
		}
	}
	if rest := c &^ known; rest != 0 {
		out = append(out, fmt.Sprintf("unknown reason %#x", uint64(rest)))
	}
	return out
}

// Throttling reports whether a performance-relevant reason is active:
// thermal, power or hardware slowdown (not idle or a clock setting).
func (c ClockEvent) Throttling() bool { return c&ClockThrottle != 0 }
