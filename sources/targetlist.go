package sources

import (
	"slices"
	"sync"
)

// TargetList is the targets polled now, shared between the source that
// finds them (discovery) and one that joins its readings to them
// (dcgm-exporter's GPUs, by host or pod): safe for both goroutines.
type TargetList struct {
	mu sync.Mutex
	ts []Target
}

// Set replaces the list.
func (l *TargetList) Set(ts []Target) {
	l.mu.Lock()
	l.ts = slices.Clone(ts)
	l.mu.Unlock()
}

// Get is the list now (a copy).
func (l *TargetList) Get() []Target {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ts)
}
