package hostproc

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vtop-dev/vtop/sources"
)

// Proc is one process, from /proc/PID/stat.
type Proc struct {
	PID, PPID int
	Comm      string
	Start     uint64 // start time in clock ticks since boot: tells a reused PID apart
}

// Table is one pass over /proc: every process and its children.
type Table struct {
	Procs    map[int]Proc
	children map[int][]int
}

// ReadTable reads every process's stat file once (one small read each, so
// a few milliseconds per thousand processes).
func ReadTable(root string) (*Table, error) {
	d, err := os.Open(root)
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	t := &Table{Procs: make(map[int]Proc, len(names)), children: map[int][]int{}}
	buf := make([]byte, 1024)
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		p, ok := readStat(filepath.Join(root, n, "stat"), buf)
		if !ok {
			continue // exited while we read
		}
		t.Procs[pid] = p
		t.children[p.PPID] = append(t.children[p.PPID], pid)
	}
	return t, nil
}

// readStat parses "pid (comm) state ppid ... starttime ..."; comm may hold
// spaces and parentheses, so fields are counted from the last ')'.
func readStat(path string, buf []byte) (Proc, bool) {
	f, err := os.Open(path)
	if err != nil {
		return Proc{}, false
	}
	n, _ := f.Read(buf)
	f.Close()
	if n == 0 {
		return Proc{}, false
	}
	b := buf[:n]
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return Proc{}, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:open])))
	if err != nil {
		return Proc{}, false
	}
	// After ')': state ppid pgrp session tty tpgid flags minflt cminflt majflt
	// cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime
	fl := strings.Fields(string(b[end+1:]))
	if len(fl) < 20 {
		return Proc{}, false
	}
	ppid, err1 := strconv.Atoi(fl[1])
	start, err2 := strconv.ParseUint(fl[19], 10, 64)
	if err1 != nil || err2 != nil {
		return Proc{}, false
	}
	return Proc{PID: pid, PPID: ppid, Comm: sources.Sanitize(string(b[open+1:end]), 64), Start: start}, true
}

// Subtree returns pid and every descendant, sorted.
func (t *Table) Subtree(pids ...int) []int {
	seen := map[int]bool{}
	stack := append([]int(nil), pids...)
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[p] {
			continue
		}
		seen[p] = true
		stack = append(stack, t.children[p]...)
	}
	out := make([]int, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Ancestors returns the parents of pid up to (not including) PID 1.
func (t *Table) Ancestors(pid int) []int {
	var out []int
	for i := 0; i < 64; i++ { // bounded: a corrupt table must not loop
		p, ok := t.Procs[pid]
		if !ok || p.PPID <= 1 {
			break
		}
		out = append(out, p.PPID)
		pid = p.PPID
	}
	return out
}
