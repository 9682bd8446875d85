package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogRefusesSymlink: --log does not follow a link planted at its path.
func TestLogRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep\n"), 0o600)
	link := filepath.Join(dir, "vtop.log")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runArgs(t, nil, "--once", "--log", link, "--window", "200ms", "--interval", "100ms", "127.0.0.1:1")
	if code != 3 || !strings.Contains(errOut, "symbolic link") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if _, _, err := openLog(dir); err == nil {
		t.Error("a directory accepted as the log file")
	}
}

// TestLogRotates: the log never grows past twice its rotation size.
func TestLogRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vtop.log")
	w, err := openRotating(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	line := bytes.Repeat([]byte("x"), 99)
	line = append(line, '\n')
	for i := 0; i < 1000; i++ {
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{path, path + ".1"} {
		st, err := os.Stat(p)
		if err != nil || st.Size() > 1000 {
			t.Errorf("%s: %v, size %d", p, err, st.Size())
		}
	}
}
