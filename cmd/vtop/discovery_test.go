package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --file-sd through the whole binary path: the file's targets are polled
// and reported like targets named on the command line.
func TestOnceFileSD(t *testing.T) {
	bin := vtopBinary(t)
	hosts := simFleet(t, bin, "--replicas", "2", "--scenario", "healthy")
	path := filepath.Join(t.TempDir(), "sd.json")
	b, _ := json.Marshal([]map[string]any{{"targets": hosts}})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runArgs(t, nil, "--once", "--window", "2s", "--interval", "500ms", "--gpu", "none", "--file-sd", path)
	if code == 3 || !strings.Contains(out, "2/2 up") {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, h := range hosts {
		if !strings.Contains(out, h) {
			t.Errorf("%s not in the report", h)
		}
	}
}

// The built binary in a terminal, targets from a file_sd file rewritten
// while it runs: the newcomer's row says it joined, the removed replica
// keeps a row saying it left, and the header gives the data's age.
func TestE2EFileSDArrivalsAndDepartures(t *testing.T) {
	bin := vtopBinary(t)
	hosts := simFleet(t, bin, "--replicas", "3", "--scenario", "healthy")
	path := filepath.Join(t.TempDir(), "sd.json")
	write := func(hs ...string) {
		b, _ := json.Marshal([]map[string]any{{"targets": hs}})
		// Renamed into place, so vtop never reads half a file.
		if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	write(hosts[0], hosts[1])
	port := func(u string) string { return u[strings.LastIndexByte(u, ':'):] }
	for _, sz := range [][2]int{{80, 24}, {200, 60}} {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			write(hosts[0], hosts[1])
			tm := newTerm(t, sz[0], sz[1])
			tm.start(bin, "--interval", "500ms", "--gpu", "none", "--log", filepath.Join(tm.dir, "vtop.log"), "--file-sd", path)
			tm.waitFor(20*time.Second, "2/2 up", port(hosts[0]), port(hosts[1]), "data 0s old")
			// Past the opening intervals: what changes now is news.
			time.Sleep(1500 * time.Millisecond)
			write(hosts[0], hosts[2])
			scr := tm.waitFor(20*time.Second, "+ joined", "− left")
			for _, l := range strings.Split(scr, "\n") {
				if strings.Contains(l, "− left") && !strings.Contains(l, port(hosts[1])) {
					t.Errorf("the departure is not on the departed replica's row: %q\n%s", l, scr)
				}
				if strings.Contains(l, "+ joined") && !strings.Contains(l, port(hosts[2])) {
					t.Errorf("the arrival is not on the new replica's row: %q\n%s", l, scr)
				}
			}
			tm.keys("q")
			tm.assertRestored("0")
		})
	}
}

// A --file-sd file that cannot be read says why in the --once report (it
// said UNKNOWN, 0/0 up and nothing else), in text and JSON.
func TestOnceFileSDFailureSaid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.json")
	code, out, errOut := runArgs(t, nil, "--once", "--window", "1s", "--interval", "200ms", "--gpu", "none", "--file-sd", path)
	if code != 3 || !strings.Contains(out, "UNKNOWN (no target: file_sd "+path+": stat") || !strings.Contains(out, "problem: file_sd") {
		t.Errorf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	_, js, _ := runArgs(t, nil, "--once", "-o", "json", "--window", "1s", "--interval", "200ms", "--gpu", "none", "--file-sd", path)
	var rep struct{ Problems []string }
	if err := json.Unmarshal([]byte(js), &rep); err != nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "no such file") {
		t.Errorf("JSON problems %q (%v)\n%s", rep.Problems, err, js)
	}
}

// A --file-sd rule's failure is recorded: replayed, the report and the
// screen name it as the live run did (a replay showed no problem at all,
// as if the rule had worked).
func TestReplayShowsProblems(t *testing.T) {
	a := movingServer(t, "m")
	missing := filepath.Join(t.TempDir(), "missing.json")
	rec := filepath.Join(t.TempDir(), "run.vtop")
	code, live, errOut := runArgs(t, nil, "--once", "--window", "1s", "--interval", "200ms", "--gpu", "none", "--file-sd", missing, "--record", rec, a)
	want := "problem: file_sd " + missing + ": stat " + missing + ": no such file or directory"
	if !strings.Contains(live, want) {
		t.Fatalf("live: exit %d, stderr %q\n%s", code, errOut, live)
	}
	code, replayed, errOut := runArgs(t, nil, "replay", "--once", rec)
	if !strings.Contains(replayed, want) {
		t.Errorf("replay: exit %d, stderr %q\n%s", code, errOut, replayed)
	}
	_, js, _ := runArgs(t, nil, "replay", "--once", "-o", "json", rec)
	var rep struct{ Problems []string }
	if err := json.Unmarshal([]byte(js), &rep); err != nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "no such file") {
		t.Errorf("replayed JSON problems %q (%v)", rep.Problems, err)
	}
	// The replay's screen: the header names the rule as failing, as live.
	tm := newTerm(t, 200, 40)
	tm.start(vtopBinary(t), "replay", rec)
	tm.waitFor(15*time.Second, "file_sd "+missing+" failing")
	tm.keys("q")
	tm.assertRestored("0")
}
