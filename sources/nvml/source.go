//go:build cgo

package nvml

import (
	"context"
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vtop-dev/vtop/sources"
)

const defaultLibrary = "libnvidia-ml.so.1"

// Source reads the local GPUs through NVML. Sample reads the fast fields
// inline; PCIe throughput (a 20 ms measurement per direction in the driver)
// and XID events come from two background goroutines, so Sample never waits
// for either. Close stops both before shutting NVML down.
type Source struct {
	lib   nvml.Interface
	o     Options
	have  [numCalls]bool
	label string
	devs  []*device
	notes []string // fixed at open: what this host cannot tell

	sampleMu sync.Mutex // one Sample at a time; Close waits for it
	closed   bool

	mu        sync.Mutex // what Sample shares with the background goroutines
	events    []sources.GPUEvent
	dropped   int
	eventNote string

	set  nvml.EventSet
	stop chan struct{}
	wg   sync.WaitGroup
}

// Open initialises NVML and returns the source; when NVML cannot start it
// returns a source that reports why and reads nothing. It never panics and
// never calls NVML after a failed Init.
func Open(o Options) sources.GPUSource {
	var opts []nvml.LibraryOption
	if o.LibraryPath != "" {
		opts = append(opts, nvml.WithLibraryPath(o.LibraryPath))
	}
	return open(nvml.New(opts...), o)
}

// open runs on any nvml.Interface: the real library or a go-nvml mock.
func open(lib nvml.Interface, o Options) sources.GPUSource {
	o.defaults()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		path := o.LibraryPath
		if path == "" {
			path = defaultLibrary
		}
		return sources.UnavailableGPU{Reason: initFailure(ret, path), Clock: o.Clock}
	}
	have, missing := resolve(lib.Extensions())
	if missing != "" {
		// Shutdown may be the missing symbol: leave the library loaded.
		return sources.UnavailableGPU{Reason: "NVML unavailable: the driver is too old (it lacks " + missing + ")", Clock: o.Clock}
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		lib.Shutdown()
		return sources.UnavailableGPU{Reason: "NVML unavailable: cannot count GPUs: " + retText(ret), Clock: o.Clock}
	}
	s := &Source{lib: lib, o: o, have: have, label: "NVML", stop: make(chan struct{})}
	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		s.label = "NVML (driver " + sources.Sanitize(v, 40) + ")"
	}
	if n == 0 {
		s.notes = append(s.notes, "NVML sees no GPUs on this host")
	}
	for i := range n {
		s.devs = append(s.devs, s.openDevice(i))
	}
	s.startEvents()
	s.wg.Add(1)
	go s.pcieLoop()
	return s
}

func initFailure(ret nvml.Return, path string) string {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "NVML unavailable: " + path + " not found"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "NVML unavailable: the NVIDIA kernel driver is not loaded"
	case nvml.ERROR_NO_PERMISSION:
		return "NVML unavailable: no permission to open the GPU devices (/dev/nvidia*)"
	}
	return "NVML unavailable: " + retText(ret)
}

// Sample reads every GPU once. A device that fails keeps its own Problem;
// the others are read as usual.
func (s *Source) Sample(ctx context.Context) sources.GPUSnapshot {
	s.sampleMu.Lock()
	defer s.sampleMu.Unlock()
	snap := sources.GPUSnapshot{Time: s.o.Clock(), Source: s.label}
	if s.closed {
		snap.Unavailable = "NVML closed"
		return snap
	}
	snap.GPUs = make([]sources.GPU, len(s.devs))
	var census procCensus
	for i, d := range s.devs {
		if err := ctx.Err(); err != nil {
			snap.GPUs[i] = d.blank()
			snap.GPUs[i].Problem = "not read: " + err.Error()
			continue
		}
		snap.GPUs[i] = s.read(d, &census)
	}
	snap.Notes = append(snap.Notes, s.notes...)
	if n := census.note(snap.GPUs); n != "" {
		snap.Notes = append(snap.Notes, n)
	}
	s.mu.Lock()
	snap.Events, s.events = s.events, nil
	if s.dropped > 0 {
		snap.Notes = append(snap.Notes, fmt.Sprintf("%d XID events dropped (more than %d between two readings)", s.dropped, maxPendingEvents))
		s.dropped = 0
	}
	if s.eventNote != "" {
		snap.Notes = append(snap.Notes, s.eventNote)
	}
	s.mu.Unlock()
	return snap
}

// Close stops the background readers and shuts NVML down. Sample after
// Close reports the source as closed.
func (s *Source) Close() error {
	s.sampleMu.Lock()
	defer s.sampleMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.stop)
	s.wg.Wait() // no NVML call may be in flight when the library shuts down
	if s.set != nil {
		s.set.Free()
	}
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("NVML shutdown: %s", retText(ret))
	}
	return nil
}

func (s *Source) problem(d *device) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return d.problem
}

func (s *Source) setProblem(d *device, p string) {
	s.mu.Lock()
	if d.problem == "" {
		d.problem = p
	}
	s.mu.Unlock()
}
