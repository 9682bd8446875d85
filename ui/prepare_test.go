package ui

import (
	"bytes"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/vtop-dev/vtop/diagnose"
)

// preparedFrom runs a command's messages aside, as the program would, and
// returns the preparation among them; the hub's read stays blocked (the
// test's hub sends nothing more).
func preparedFrom(t *testing.T, cmd tea.Cmd) preparedMsg {
	t.Helper()
	got := make(chan preparedMsg, 4)
	var run func(tea.Cmd)
	run = func(c tea.Cmd) {
		if c == nil {
			return
		}
		go func() {
			switch msg := c().(type) {
			case tea.BatchMsg:
				for _, c := range msg {
					run(c)
				}
			case preparedMsg:
				got <- msg
			}
		}()
	}
	run(cmd)
	select {
	case p := <-got:
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no frame was prepared")
		return preparedMsg{}
	}
}

// asideModel is a model at 200×60 that has shown fr, with frames from now
// on prepared aside as in the program.
func asideModel(t *testing.T, fr *diagnose.Frame) *Model {
	m := newTestModel(fr, 200, 60, Options{})
	m.Init()
	return m
}

func renamed(name string) *diagnose.Frame {
	fr := fleetFrame()
	fr.Endpoints[1].Name = name
	return fr
}

// A frame is applied off the UI goroutine: Update returns at once with the
// old frame still shown, a key pressed meanwhile is handled on the old
// frame, the preparation copied before the key is thrown away and the
// frame prepared again from the new state, so the screen ends as if frame
// and key had been applied in order on one goroutine.
func TestFrameAppliedAside(t *testing.T) {
	fr1, fr2 := fleetFrame(), renamed("first-replica")
	m := asideModel(t, fr1)
	_, cmd := m.Update(frameMsg{fr2})
	if m.fr != fr1 {
		t.Fatal("the frame was applied in Update, on the UI goroutine")
	}
	was := m.fleet.cursor
	press(m, "j", "j")
	if m.fleet.cursor != was+2 {
		t.Fatalf("cursor %d after two keys behind a frame, want %d", m.fleet.cursor, was+2)
	}
	_, cmd = m.Update(preparedFrom(t, cmd)) // copied before the keys: stale
	if m.fr != fr1 || cmd == nil {
		t.Fatalf("a preparation older than the keys was adopted (or not redone): %v", cmd)
	}
	m.Update(preparedFrom(t, cmd))
	if m.fr != fr2 {
		t.Fatal("the frame prepared again was not adopted")
	}
	ref := newTestModel(fr1, 200, 60, Options{})
	press(ref, "j", "j")
	ref.Update(frameMsg{fr2})
	if got, want := m.View(), ref.View(); got != want {
		t.Errorf("prepared aside:\n%s\napplied in order:\n%s", got, want)
	}
	if !bytes.Contains([]byte(m.View()), []byte("first-replica")) {
		t.Error("the new frame's name is not on screen")
	}
}

// Frames that arrive while one is prepared wait in one slot: the newest
// is prepared next, the ones between are never applied.
func TestFramesCoalesce(t *testing.T) {
	m := asideModel(t, fleetFrame())
	fr2, fr3, fr4 := renamed("two"), renamed("three"), renamed("four")
	_, cmd := m.Update(frameMsg{fr2})
	m.Update(frameMsg{fr3})
	m.Update(frameMsg{fr4})
	_, next := m.Update(preparedFrom(t, cmd))
	if m.fr != fr2 {
		t.Fatal("the first preparation was not adopted")
	}
	p := preparedFrom(t, next)
	if p.fr != fr4 {
		t.Fatalf("prepared %q next, want the newest (four)", p.fr.Endpoints[1].Name)
	}
	m.Update(p)
	if m.fr != fr4 || m.prep.next != nil || m.prep.busy {
		t.Fatalf("after the newest: shown %q, waiting %v, busy %v", m.fr.Endpoints[1].Name, m.prep.next, m.prep.busy)
	}
}

// Keys pressed faster than frames are prepared would starve the screen of
// data: after maxMissed preparations lost to keys, the frame is applied
// on the UI goroutine.
func TestPreparationNotStarvedByKeys(t *testing.T) {
	fr1, fr2 := fleetFrame(), renamed("first-replica")
	m := asideModel(t, fr1)
	_, cmd := m.Update(frameMsg{fr2})
	for i := range maxMissed {
		if m.fr != fr1 {
			t.Fatalf("applied after %d lost preparations, want %d", i, maxMissed)
		}
		press(m, "j")
		_, cmd = m.Update(preparedFrom(t, cmd))
	}
	if m.fr != fr2 || cmd != nil {
		t.Fatalf("after %d lost preparations the frame is still not shown", maxMissed)
	}
}

// The program with frames and keys crossing: run with -race, it shows
// that a preparation shares nothing the screen writes. The keys open and
// close rows, groups, the filter, an endpoint and the help while frames
// keep coming; the screen ends on the last frame.
func TestProgramFramesAndKeysCross(t *testing.T) {
	h := newFrameHub()
	m := New(h, Options{Tick: -1})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(200, 60))
	out := tm.Output()
	keys := []string{"j", "space", "tab", "enter", "j", "esc", "/", "r", "e", "enter", "esc", "s", "enter", "?", "esc", "esc", "k"}
	const frames = 40
	frame := func(i int) *diagnose.Frame {
		fr := fixtureFrame(fixtureOpts{endpoints: 12, gpus: 8, findings: true})
		fr.Time = fr.Time.Add(time.Duration(i) * time.Second)
		return fr
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range frames - 1 {
			h.ch <- frame(i)
		}
	}()
	for i := range 4 * len(keys) {
		tm.Send(keyMsg(keys[i%len(keys)]))
		time.Sleep(2 * time.Millisecond)
	}
	<-sent
	for range 4 { // back to the fleet's table, unfiltered
		tm.Send(keyMsg("esc"))
	}
	last := frame(frames - 1)
	last.Endpoints[0].Name = "replica-the-last"
	h.ch <- last
	teatest.WaitFor(t, out, func(b []byte) bool { return bytes.Contains(b, []byte("the-last")) },
		teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(5*time.Millisecond))
	tm.Send(keyMsg("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}
