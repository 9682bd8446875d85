//go:build cgo

package nvml

import (
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vtop-dev/vtop/sources"
)

// maxPendingEvents bounds the events kept between two readings; an XID storm
// must not grow memory without end.
const maxPendingEvents = 256

// startEvents registers every GPU that supports it for XID events and starts
// the goroutine that waits for them. What could not be watched becomes a note.
func (s *Source) startEvents() {
	for _, c := range []call{cEventCreate, cEventSupported, cEventRegister, cEventWait, cEventFree} {
		if !s.have[c] {
			s.notes = append(s.notes, "XID events: driver lacks "+symbols[c][0])
			return
		}
	}
	if len(s.devs) == 0 {
		return
	}
	set, ret := s.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		s.notes = append(s.notes, "XID events unavailable: "+retText(ret))
		return
	}
	watched, usable, why := 0, 0, ""
	for _, d := range s.devs {
		if d.h == nil || d.problem != "" {
			continue
		}
		usable++
		types, ret := d.h.GetSupportedEventTypes()
		if ret == nvml.SUCCESS && types&nvml.EventTypeXidCriticalError == 0 {
			ret = nvml.ERROR_NOT_SUPPORTED
		}
		if ret == nvml.SUCCESS {
			ret = d.h.RegisterEvents(nvml.EventTypeXidCriticalError, set)
		}
		if ret != nvml.SUCCESS {
			why = retText(ret)
			continue
		}
		watched++
	}
	switch {
	case watched == 0:
		set.Free()
		if usable > 0 {
			s.notes = append(s.notes, "XID events unavailable: "+why)
		}
		return
	case watched < usable:
		s.notes = append(s.notes, fmt.Sprintf("XID events watched on %d of %d GPUs (others: %s)", watched, usable, why))
	}
	s.set = set
	s.wg.Add(1)
	go s.eventLoop()
}

// eventLoop waits for events in short slices so Close is never held up for
// long, and backs off when the driver keeps failing.
func (s *Source) eventLoop() {
	defer s.wg.Done()
	ms := uint32(s.o.EventWait / time.Millisecond)
	fails := 0
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		data, ret := s.set.Wait(ms)
		switch ret {
		case nvml.SUCCESS:
			fails = 0
			s.onEvent(data)
		case nvml.ERROR_TIMEOUT:
			fails = 0
		default:
			fails++
			if fails >= 20 {
				s.mu.Lock()
				s.eventNote = "XID events stopped: " + retText(ret)
				s.mu.Unlock()
				return
			}
			select {
			case <-s.stop:
				return
			case <-time.After(s.o.EventWait):
			}
		}
	}
}

func (s *Source) onEvent(data nvml.EventData) {
	if data.EventType&nvml.EventTypeXidCriticalError == 0 {
		return
	}
	dev := s.deviceOf(data.Device)
	idx := -1
	if dev != nil {
		idx = dev.index
	}
	ev := sources.XIDEvent(s.o.Clock(), idx, int(data.EventData))
	s.mu.Lock()
	defer s.mu.Unlock()
	if dev != nil && ev.XID == 79 && dev.problem == "" {
		dev.problem = problemLost // no more calls into a GPU that left the bus
	}
	if len(s.events) >= maxPendingEvents {
		s.events = append(s.events[:0], s.events[1:]...)
		s.dropped++
	}
	s.events = append(s.events, ev)
}

// deviceOf finds the device an event came from; nil when none matches.
func (s *Source) deviceOf(h nvml.Device) *device {
	if h == nil {
		return nil
	}
	for _, d := range s.devs {
		if d.h != nil && d.h == h {
			return d
		}
	}
	return nil
}
