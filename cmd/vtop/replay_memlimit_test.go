package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/record"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/ui/format"
)

// leakLine is what a frame says about memory_leak: its state, severity and
// summary (the projection to exhaustion is in it), "" when not shown.
func leakLine(fr *diagnose.Frame) string {
	for _, fs := range [][]diagnose.Finding{fr.Findings, fr.Pending} {
		for _, f := range fs {
			if f.Rule == "memory_leak" {
				return fmt.Sprintf("%s %s: %s", f.State, f.Severity, format.Say(f.Summary))
			}
		}
	}
	return ""
}

// The memory limit of a local endpoint's processes (cgroup or host) is
// recorded with its process tree, so a replayed leak is projected against
// the same limit as the live one: the same words at every evaluation.
func TestReplayKeepsMemoryLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "leak.vtop")
	rcs := []sim.ReplicaConfig{{Name: "replica-0", Scenarios: []sim.ScenarioSpec{{Name: "memory-leak-steep"}}}}
	const limit = 48 << 30
	var live []string
	simRunTrees(t, path, rcs, 240, func(pt *sources.ProcTree) { pt.MemLimit, pt.MemLimitFrom = limit, "cgroup memory limit" },
		func(fr *diagnose.Frame) { live = append(live, leakLine(fr)) })
	last := live[len(live)-1]
	if !strings.Contains(last, "critical: ") || !strings.Contains(last, "cgroup memory limit (48 GiB) reached") {
		t.Fatalf("live run: no critical leak projected against the limit: %q", last)
	}
	replaySays(t, path, live, leakLine)
}

// Recordings from before the limit was recorded (format 1, in testdata)
// still replay: their process trees read with the limit unknown.
func TestOldRecordingHasNoMemoryLimit(t *testing.T) {
	r, err := record.Open(filepath.Join("testdata", "replay", "kv-thrashing.vtop"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if f := r.Header().Format; f != 1 {
		t.Fatalf("testdata recording is format %d, want an old one (1)", f)
	}
	trees := 0
	for {
		ev, err := r.Next()
		if err != nil || ev == nil {
			break
		}
		if ev.Kind == record.KindProcs {
			trees++
			if ev.Procs.MemLimit != 0 || ev.Procs.MemLimitFrom != "" || ev.Procs.Root == 0 {
				t.Errorf("process tree %+v", ev.Procs)
			}
		}
	}
	if trees == 0 {
		t.Fatal("no process tree read")
	}
}
