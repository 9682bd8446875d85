package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// maxLogSize is the size at which --log is rotated to <file>.1 (one old
// file kept), so the log stays under twice this however long vtop runs.
const maxLogSize = 8 << 20

func openLog(path string) (*slog.Logger, func(), error) {
	if path == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil)), func() {}, nil
	}
	w, err := openRotating(path, maxLogSize)
	if err != nil {
		return nil, nil, fmt.Errorf("--log: %v", err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})), func() { w.Close() }, nil
}

// rotating is an append-only log file that moves itself to path.1 when it
// reaches max bytes.
type rotating struct {
	mu   sync.Mutex
	path string
	max  int64
	f    *os.File
	size int64
}

func openRotating(path string, max int64) (*rotating, error) {
	f, size, err := openLogFile(path)
	if err != nil {
		return nil, err
	}
	return &rotating{path: path, max: max, f: f, size: size}, nil
}

// openLogFile opens path for appending without following a symbolic link
// (another user could plant one pointing at a file of ours) and only if it
// is a regular file.
func openLogFile(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, 0, fmt.Errorf("%s is a symbolic link; give the file itself", path)
		}
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	return f, st.Size(), nil
}

func (r *rotating) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, fs.ErrClosed
	}
	if r.size > 0 && r.size+int64(len(b)) > r.max {
		r.rotate()
	}
	n, err := r.f.Write(b)
	r.size += int64(n)
	return n, err
}

// rotate moves the file to path.1 and starts a new one; if that fails the
// old file is truncated, so the bound holds either way.
func (r *rotating) rotate() {
	if err := os.Rename(r.path, r.path+".1"); err == nil {
		if f, _, err := openLogFile(r.path); err == nil {
			r.f.Close()
			r.f, r.size = f, 0
			return
		}
	}
	if r.f.Truncate(0) == nil {
		r.size = 0
	}
}

func (r *rotating) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// hasLog reports whether diagnostics go to a --log file.
func (o *options) hasLog() bool { return o.logFile != "" }

// runtimeLogEvery is how often --log records vtop's own goroutines and heap,
// so a long run (scripts/soak.sh) can tell growth from a steady state.
const runtimeLogEvery = 10 * time.Second

func logRuntime(ctx context.Context, l *slog.Logger, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var ms runtime.MemStats
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			runtime.ReadMemStats(&ms)
			l.Info("runtime", "goroutines", runtime.NumGoroutine(), "heap_inuse", ms.HeapInuse, "sys", ms.Sys, "gc", ms.NumGC)
		}
	}
}
