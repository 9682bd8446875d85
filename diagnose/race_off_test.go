//go:build !race

package diagnose_test

const raceOn = false
