package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// maxLogSize is the size at which --log is rotated to <file>.1 (one old
// file kept), so the log stays under twice this however long vtop runs.
const maxLogSize = 8 << 20

// logRepeat is how often a target's unchanged error or warnings are logged
// again: a fleet with a broken target would otherwise log the same lines
// every poll (0.4–2 GB/h at 200 endpoints).
const logRepeat = 10 * time.Minute

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

// scrapeLog logs each target's scrape error or warnings when they change,
// and an unchanged one again only every logRepeat, with how often it recurred.
type scrapeLog struct {
	log  *slog.Logger
	now  func() time.Time
	last map[string]*logged // by target name
}

type logged struct {
	msg     string
	at      time.Time
	repeats int
}

func newScrapeLog(l *slog.Logger, now func() time.Time) *scrapeLog {
	return &scrapeLog{log: l, now: now, last: map[string]*logged{}}
}

func (sl *scrapeLog) note(s sources.Scrape) {
	var msg string
	switch {
	case s.Err != nil:
		msg = "scrape failed: " + s.Err.Error()
	case s.Data != nil && len(s.Data.Warnings) > 0:
		msg = "scrape warnings: " + strings.Join(s.Data.Warnings, "; ")
	}
	l := sl.last[s.Target]
	if msg == "" {
		if l != nil && l.msg != "" {
			sl.log.Info("scrape ok again", "target", s.Target)
			delete(sl.last, s.Target)
		}
		return
	}
	now := sl.now()
	if l != nil && l.msg == msg && now.Sub(l.at) < logRepeat {
		l.repeats++
		return
	}
	if l != nil && l.msg == msg {
		sl.log.Debug(msg, "target", s.Target, "repeated", l.repeats)
	} else {
		sl.log.Debug(msg, "target", s.Target)
	}
	sl.last[s.Target] = &logged{msg: msg, at: now}
}

// hasLog reports whether diagnostics go to a --log file.
func (o *options) hasLog() bool { return o.logFile != "" }
