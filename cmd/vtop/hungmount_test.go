package main

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/internal/hungfs"
)

// hungMount mounts a real hung filesystem (internal/hungfs: FUSE whose
// server stopped answering, as an NFS hard mount whose server is gone)
// and returns a --file-sd path on it; skipped where FUSE cannot be
// mounted (TestFileSDFIFOQuits covers the path without privileges).
func hungMount(t *testing.T) string {
	t.Helper()
	m, err := hungfs.New(t.TempDir())
	if errors.Is(err, hungfs.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return filepath.Join(m.Dir, "sd.json")
}

// A --file-sd file on a hung mount: --once still reports, on time, the
// static target it polled and the rule named as stuck; the TUI runs, q
// and SIGTERM end it with the terminal restored, though a stat of the
// file is still blocked in the kernel. A mount each: a second process
// looking up a name whose lookup hangs waits for it uninterruptibly
// (the kernel's d_wait_lookup), so it could not exit until the first
// one's ended; one process (vtop reads a file one call at a time) waits
// killably, and exits.
func TestHungMountFileSD(t *testing.T) {
	a := movingServer(t, "m")
	t.Run("once", func(t *testing.T) {
		path := hungMount(t)
		start := time.Now()
		code, out, errOut := runArgs(t, nil, "--once", "--window", "5s", "--interval", "250ms", "--gpu", "none", "--file-sd", path, a)
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("--once took %s", d)
		}
		if code == 3 || !strings.Contains(out, "1/1 up") || !strings.Contains(out, "problem: file_sd "+path+": stuck") {
			t.Errorf("exit %d, stderr %q\n%s", code, errOut, out)
		}
	})
	bin := vtopBinary(t)
	for _, how := range []string{"q", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			path := hungMount(t)
			tm := newTerm(t, 100, 30)
			tm.start(bin, "--interval", "250ms", "--window", "2s", "--gpu", "none", "--log", filepath.Join(tm.dir, "vtop.log"), "--file-sd", path, a)
			tm.waitFor(10*time.Second, "1/1 up", "Latency")
			time.Sleep(3500 * time.Millisecond) // past the point the rule is said to be stuck
			if s := tm.screen(); strings.Contains(s, "VTOP-EXIT") {
				t.Fatalf("vtop exited:\n%s", s)
			}
			if how == "q" {
				tm.keys("q")
			} else if err := syscall.Kill(tm.vtopPID(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			tm.assertRestored("0")
		})
	}
}
