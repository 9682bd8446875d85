package sources

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestClockEventWords(t *testing.T) {
	if w := ClockEvent(0).Words(); w != nil {
		t.Errorf("none: %q", w)
	}
	got := (ClockSWPowerCap | ClockHWThermal | 0x4000).Words()
	if !slices.Equal(got, []string{"power cap", "thermal slowdown (hardware)", "unknown reason 0x4000"}) {
		t.Errorf("%q", got)
	}
	for _, c := range []struct {
		ev   ClockEvent
		want bool
	}{
		{ClockIdle, false}, {ClockAppSetting, false}, {ClockSyncBoost, false}, {ClockDisplaySetting, false},
		{ClockSWPowerCap, true}, {ClockHWSlowdown, true}, {ClockSWThermal, true}, {ClockHWThermal, true},
		{ClockHWPowerBrake, true}, {ClockIdle | ClockSWThermal, true},
	} {
		if c.ev.Throttling() != c.want {
			t.Errorf("%#x throttling = %v", uint64(c.ev), !c.want)
		}
	}
}

func TestXIDTable(t *testing.T) {
	// The XIDs the issue names, with the action each calls for.
	for xid, act := range map[int]XIDAction{48: XIDResetGPU, 63: XIDResetGPU, 64: XIDResetGPU, 74: XIDResetGPU,
		79: XIDReboot, 94: XIDRestartApp, 95: XIDResetGPU} {
		x := LookupXID(xid)
		if x.Level != "critical" || x.Action != act || x.XID != xid {
			t.Errorf("XID %d: %+v", xid, x)
		}
	}
	if x := LookupXID(9999); x.Level != "warning" || x.Action != XIDWatch || x.Name == "" {
		t.Errorf("unknown XID: %+v", x)
	}
	known := KnownXIDs()
	if !slices.IsSortedFunc(known, func(a, b XIDInfo) int { return a.XID - b.XID }) || len(known) < 7 {
		t.Errorf("KnownXIDs: %d entries", len(known))
	}
	for _, x := range known {
		if x.Name == "" || x.Action.Advice() == "" || (x.Level != "critical" && x.Level != "warning" && x.Level != "info") {
			t.Errorf("incomplete entry %+v", x)
		}
	}
	now := time.Unix(100, 0)
	if ev := XIDEvent(now, 3, 79); ev != (GPUEvent{Time: now, GPU: 3, XID: 79, Text: "GPU has fallen off the bus", Level: "critical"}) {
		t.Errorf("%+v", ev)
	}
}

func TestUnavailableGPU(t *testing.T) {
	now := time.Unix(42, 0)
	src := UnavailableGPU{Reason: "GPU reading off (--gpu none)", Clock: func() time.Time { return now }}
	if s := src.Sample(context.Background()); s.Unavailable != src.Reason || !s.Time.Equal(now) || s.GPUs != nil {
		t.Errorf("%+v", s)
	}
}

func TestSnapshotPIDs(t *testing.T) {
	s := GPUSnapshot{GPUs: []GPU{
		{Processes: []GPUProcess{{PID: 30}, {PID: 10}}},
		{},
		{Processes: []GPUProcess{{PID: 10}, {PID: 20}}},
	}}
	if got := s.PIDs(); !slices.Equal(got, []int{10, 20, 30}) {
		t.Errorf("%v", got)
	}
}
