package main

import (
	"path/filepath"
	"testing"
	"time"
)

// vtop replay in a real terminal: the timeline shows where findings fired,
// the playback keys pause, seek to a finding and back to the start, and the
// terminal is restored on quit.
func TestE2EReplay(t *testing.T) {
	bin := vtopBinary(t)
	rec, err := filepath.Abs(filepath.Join("testdata", "replay", "kv-thrashing.vtop"))
	if err != nil {
		t.Fatal(err)
	}
	tm := newTerm(t, 120, 32)
	tm.start(bin, "replay", "--speed", "5", rec)
	tm.waitFor(20*time.Second, "replay ▶ ×5", "09:01:30", "✖", "replica-3")
	tm.keys("p")
	tm.waitFor(10*time.Second, "replay ⏸ ×5")
	tm.keys("]")
	tm.waitFor(10*time.Second, "replay ⏸ ×5 09:00:53")
	tm.keys("0")
	tm.waitFor(10*time.Second, "replay ⏸ ×5 09:00:01")
	tm.keys(".")
	tm.waitFor(10*time.Second, "replay ⏸ ×5 09:00:02")
	tm.keys(">")
	tm.waitFor(10*time.Second, "replay ⏸ ×10")
	tm.keys("9", "p")
	tm.waitFor(20*time.Second, "replay ■ end 09:01:30", "KV cache thrashing")
	tm.keys("q")
	tm.assertRestored("0")
}
