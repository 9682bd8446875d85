package ui

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest"
)

// The model in a real bubbletea program: frames arrive over the hub's
// channel (the read is re-armed after each), keys drive it, q ends it.
func TestProgram(t *testing.T) {
	h := newFrameHub()
	m := New(h, Options{Tick: -1})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	waitFor := func(s string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(s)) },
			teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(5*time.Millisecond))
	}
	waitFor("waiting for the first poll")
	h.ch <- fleetFrame()
	waitFor("replica-7")
	tm.Send(keyMsg("enter")) // replica-1, the worst, is the first row
	waitFor("Throughput")
	fr := fleetFrame()
	fr.Endpoints[1].Name = "replica-one"
	h.ch <- fr
	waitFor("replica-one ·")
	tm.Send(keyMsg("?"))
	waitFor("Help: keys and symbols")
	close(h.ch)
	waitFor("polling stopped")
	tm.Send(keyMsg("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}

// A frame that changes nothing on screen writes nothing to the terminal:
// the same frame again leaves the output as it was; a frame with a new
// name writes (so the check can fail).
func TestUnchangedFrameWritesNothing(t *testing.T) {
	h := newFrameHub()
	m := New(h, Options{Tick: -1})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(200, 60))
	out := tm.Output()
	teatest.WaitFor(t, out, func(b []byte) bool { return bytes.Contains(b, []byte("waiting for the first poll")) },
		teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(5*time.Millisecond))
	written := func() int {
		time.Sleep(150 * time.Millisecond) // a dozen render ticks at 120 fps
		b, _ := io.ReadAll(out)
		return len(b)
	}
	fr := fleetFrame()
	h.ch <- fr
	if n := written(); n == 0 {
		t.Fatal("the first frame wrote nothing")
	}
	for range 3 {
		h.ch <- fleetFrame()
		if n := written(); n != 0 {
			t.Fatalf("an unchanged frame wrote %d bytes", n)
		}
	}
	changed := fleetFrame()
	changed.Endpoints[1].Name = "replica-one"
	h.ch <- changed
	if n := written(); n == 0 {
		t.Fatal("a changed frame wrote nothing")
	}
	tm.Send(keyMsg("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}
