package hostproc

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MemLimit is the memory process pid can use, in bytes: the tightest
// memory limit on its cgroup's path (cgroup v2 memory.max, or v1
// memory.limit_in_bytes) when that is below the host's MemTotal, else
// MemTotal from procRoot/meminfo. from names the source; 0 when neither can
// be read. procRoot stands for /proc and cgroupRoot for /sys/fs/cgroup, so
// tests can point both at a directory of real files.
func MemLimit(procRoot, cgroupRoot string, pid int) (limit float64, from string) {
	total := memTotal(filepath.Join(procRoot, "meminfo"))
	cg := cgroupLimit(procRoot, cgroupRoot, pid)
	switch {
	case cg > 0 && (total == 0 || cg < total):
		return cg, "cgroup memory limit"
	case total > 0:
		return total, "host MemTotal"
	}
	return 0, ""
}

// cgroupLimit walks the process's memory cgroup from its own directory up
// to the root and keeps the smallest limit ("max" and v1's near-2⁶³ value
// mean none). 0: no limit found.
func cgroupLimit(procRoot, cgroupRoot string, pid int) float64 {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return 0
	}
	var dir, file string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "" && dir == "": // v2 unified
			dir, file = filepath.Join(cgroupRoot, filepath.Clean("/"+f[2])), "memory.max"
		case hasController(f[1], "memory"): // v1 wins: it is where the limit lives then
			dir, file = filepath.Join(cgroupRoot, "memory", filepath.Clean("/"+f[2])), "memory.limit_in_bytes"
		}
	}
	if dir == "" {
		return 0
	}
	best := 0.0
	top := filepath.Clean(cgroupRoot)
	for d := dir; ; d = filepath.Dir(d) {
		if v, ok := limitFile(filepath.Join(d, file)); ok && (best == 0 || v < best) {
			best = v
		}
		if d == top || len(d) <= len(top) || d == filepath.Dir(d) {
			break
		}
	}
	return best
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// limitFile reads one limit: a byte count, or "max" (none). v1 writes
// about 2⁶³ for none.
func limitFile(path string) (float64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v == 0 || v >= 1<<62 {
		return 0, false
	}
	return float64(v), true
}

// memTotal reads MemTotal (kB) from a meminfo file, in bytes; 0 unknown.
func memTotal(path string) float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0
		}
		return float64(kb) * 1024
	}
	return 0
}
