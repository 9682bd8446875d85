//go:build race

package diagnose_test

// raceOn: the race detector slows the simulator and the engine about
// fifteenfold; the longest scenario runs draw fewer seeds under it.
const raceOn = true
