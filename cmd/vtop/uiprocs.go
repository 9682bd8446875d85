package main

import "runtime"

// uiSpareProcs is how many Ps the TUI runs with beyond the cores. A key
// reaches the screen through three goroutines in turn (the input reader,
// bubbletea's event loop, its renderer), and at 1,000 endpoints each
// waited for a P behind the pollers, the detector and the collector's
// workers, which hold the Ps in stretches of 10–100 ms: a runtime trace of
// the slow presses had the event loop runnable for up to 163 ms, its own
// work 1 ms at the median. With a P to spare a woken UI goroutine more
// often finds one idle, and the kernel, which favours a thread that slept,
// runs it soon. With one spare, key-to-screen p99 was lower than without
// in the same seconds in six runs of six, for 0–11 % more CPU; two
// spares cost 8–15 % (BENCHMARKS.md, issue 23).
const uiSpareProcs = 1

// setUIProcs raises GOMAXPROCS for the TUI by uiSpareProcs and returns the
// new value; a GOMAXPROCS in the environment wins (0 is returned).
func setUIProcs(getenv func(string) string) int {
	if getenv("GOMAXPROCS") != "" {
		return 0
	}
	n := runtime.GOMAXPROCS(0) + uiSpareProcs
	runtime.GOMAXPROCS(n)
	return n
}
