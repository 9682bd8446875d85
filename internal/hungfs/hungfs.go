//go:build linux

// Package hungfs mounts, for tests, a real filesystem whose every call
// blocks: a FUSE mount whose server answers the kernel's INIT and then
// nothing. A stat, open or read under it waits in the kernel, as on an
// NFS hard mount whose server is gone; closing the server's end (Close)
// fails the waiting calls with ENOTCONN and the mount is detached.
package hungfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Mount is a hung mount at Dir.
type Mount struct {
	Dir string
	fd  int
}

// ErrUnavailable is returned when this machine cannot mount FUSE here
// (no /dev/fuse, or no privilege to mount): the caller skips.
var ErrUnavailable = errors.New("hungfs: FUSE cannot be mounted here")

// New mounts a hung filesystem on a new directory under parent.
func New(parent string) (*Mount, error) {
	fd, err := syscall.Open("/dev/fuse", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: open /dev/fuse: %v", ErrUnavailable, err)
	}
	dir, err := os.MkdirTemp(parent, "hung")
	if err != nil {
		syscall.Close(fd)
		return nil, err
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=%d,group_id=%d", fd, os.Getuid(), os.Getgid())
	if err := syscall.Mount("vtop-hung", dir, "fuse.vtophung", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		syscall.Close(fd)
		os.Remove(dir)
		return nil, fmt.Errorf("%w: mount: %v", ErrUnavailable, err)
	}
	m := &Mount{Dir: dir, fd: fd}
	if err := m.init(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// init answers the kernel's FUSE_INIT, the one request ever answered: the
// mount is then up, and every later call waits for an answer that never
// comes.
func (m *Mount) init() error {
	buf := make([]byte, 1<<17)
	n, err := syscall.Read(m.fd, buf)
	if err != nil {
		return fmt.Errorf("hungfs: read INIT: %v", err)
	}
	const opInit = 26
	// fuse_in_header: len u32, opcode u32, unique u64, ...
	if n < 40 || binary.LittleEndian.Uint32(buf[4:]) != opInit {
		return fmt.Errorf("hungfs: the kernel's first request is not INIT")
	}
	unique := binary.LittleEndian.Uint64(buf[8:])
	// fuse_out_header (len, error, unique) and fuse_init_out (64 bytes):
	// protocol 7.31, max_write 4 KiB, everything else off.
	out := make([]byte, 16+64)
	binary.LittleEndian.PutUint32(out[0:], uint32(len(out)))
	binary.LittleEndian.PutUint64(out[8:], unique)
	binary.LittleEndian.PutUint32(out[16:], 7)
	binary.LittleEndian.PutUint32(out[20:], 31)
	binary.LittleEndian.PutUint32(out[16+20:], 4096)
	if _, err := syscall.Write(m.fd, out); err != nil {
		return fmt.Errorf("hungfs: answer INIT: %v", err)
	}
	return nil
}

// Close ends the server: calls still waiting fail, and the mount is
// detached and its directory removed.
func (m *Mount) Close() error {
	syscall.Close(m.fd)
	err := syscall.Unmount(m.Dir, syscall.MNT_DETACH)
	os.Remove(m.Dir)
	return err
}
