package main

import (
	"runtime"
	"testing"
)

// The TUI runs with Ps to spare beyond the cores, unless GOMAXPROCS is set
// in the environment.
func TestUIProcs(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(was)

	if uiSpareProcs < 1 {
		t.Fatalf("uiSpareProcs = %d: the TUI gets no P to spare", uiSpareProcs)
	}
	if n := setUIProcs(func(string) string { return "" }); n != was+uiSpareProcs {
		t.Errorf("setUIProcs = %d, want %d", n, was+uiSpareProcs)
	}
	if got := runtime.GOMAXPROCS(0); got != was+uiSpareProcs {
		t.Errorf("GOMAXPROCS = %d after setUIProcs, want %d", got, was+uiSpareProcs)
	}

	runtime.GOMAXPROCS(was)
	env := func(k string) string {
		if k == "GOMAXPROCS" {
			return "1"
		}
		return ""
	}
	if n := setUIProcs(env); n != 0 {
		t.Errorf("setUIProcs with GOMAXPROCS set = %d, want 0", n)
	}
	if got := runtime.GOMAXPROCS(0); got != was {
		t.Errorf("GOMAXPROCS = %d with the environment's setting, want it left at %d", got, was)
	}
}
