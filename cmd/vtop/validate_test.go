package main

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNumericLimits: absurd numbers are errors naming the option, never an
// overflowed wait or size.
func TestNumericLimits(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--interval", "2562047h"}, "--interval 2562047h0m0s is longer than 1h0m0s"},
		{[]string{"--interval", "10ms"}, "--interval must be at least 100ms"},
		{[]string{"--window", "100000h"}, "--window 100000h0m0s is longer than 24h0m0s"},
		{[]string{"--timeout", "1000h"}, "--timeout 1000h0m0s is longer than 10m0s"},
		{[]string{"--timeout", "-1s"}, "--timeout must be positive"},
		{[]string{"--max-body", "9223372036854775807KiB"}, "is too large"},
		{[]string{"--max-body", "8589934592GiB"}, "is too large"},
		{[]string{"--max-body", "9223372036854775807"}, "--max-body must be between 1 B and 1024 MiB"},
		{[]string{"--max-body", "2GiB"}, "--max-body must be between"},
		{[]string{"--max-samples", "-1"}, "--max-samples must be between 1 and"},
		{[]string{"--max-samples", "0"}, "--max-samples must be between 1 and"},
		{[]string{"--max-parallel", "-5"}, "--max-parallel must be between 0"},
	} {
		code, _, errOut := runArgs(t, nil, append(c.args, "127.0.0.1:1")...)
		if code != 3 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}
}

// TestIsTerminal: /dev/null is a character device but not a terminal (vtop
// > /dev/null once ran an invisible TUI); a pseudo-terminal is one.
func TestIsTerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(null) {
		t.Error("/dev/null counted as a terminal")
	}
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	if isTerminal(w) {
		t.Error("a pipe counted as a terminal")
	}
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile("/dev/pts/"+itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pts.Close()
	if !isTerminal(pts) {
		t.Error("a pseudo-terminal not counted as a terminal")
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
