package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
