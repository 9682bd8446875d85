package hostproc

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// socketInodes lists the socket inodes a process holds open. denied is true
// when its fd directory belongs to another user we may not read.
func socketInodes(root string, pid int) (inodes []uint64, denied bool) {
	dir := filepath.Join(root, strconv.Itoa(pid), "fd")
	d, err := os.Open(dir)
	if err != nil {
		return nil, errors.Is(err, fs.ErrPermission)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, errors.Is(err, fs.ErrPermission)
	}
	for _, n := range names {
		l, err := os.Readlink(dir + "/" + n)
		if err != nil {
			continue
		}
		s, ok := strings.CutPrefix(l, "socket:[")
		if !ok {
			continue
		}
		if ino, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
			inodes = append(inodes, ino)
		}
	}
	return inodes, false
}
