package app

import (
	"context"
	"sync"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/ui"
)

// replaySpeeds are the playback speeds, times real time.
var replaySpeeds = []int{1, 2, 5, 10, 30, 60}

// replayTick is how often playback moves on in wall time.
const replayTick = 50 * time.Millisecond

// ReplayHub plays a recording into the TUI: it implements ui.Player. One
// goroutine (run) owns the player; the UI's requests reach it as commands.
// A background scan of the whole recording finds its end and the times
// findings fired, for the timeline and for seeking to findings.
type ReplayHub struct {
	files      []string
	maxSamples int
	slo        string
	frames     chan *diagnose.Frame // capacity 1, newest wins
	cmds       chan func(*replayLoop)
	wake       chan struct{} // capacity 1: a setting was asked (want)

	mu    sync.Mutex
	state ui.ReplayState
	want  request // the newest window and SLO asked, applied by the loop
}

// NewReplayHub plays files at speed (times real time) once Run starts.
func NewReplayHub(files []string, maxSamples int, slo string, speed int) *ReplayHub {
	return &ReplayHub{files: files, maxSamples: maxSamples, slo: slo, frames: make(chan *diagnose.Frame, 1),
		cmds: make(chan func(*replayLoop), 16), wake: make(chan struct{}, 1), state: ui.ReplayState{Speed: speed}}
}

func (h *ReplayHub) Frames() <-chan *diagnose.Frame { return h.frames }
func (h *ReplayHub) PollNow()                       {} // nothing to poll: the recording is what it is

func (h *ReplayHub) send(f func(*replayLoop)) {
	select {
	case h.cmds <- f:
	default: // a UI that floods keys loses some, never blocks
	}
}

// SetWindow and SetSLO are settings: the newest asked wins, as in the
// live hub, however fast the keys come.
func (h *ReplayHub) SetWindow(w time.Duration) { h.ask(func(r *request) { r.window = w }) }

func (h *ReplayHub) SetSLO(s diagnose.SLO) { h.ask(func(r *request) { r.slo = &s }) }

func (h *ReplayHub) ask(f func(*request)) {
	h.mu.Lock()
	f(&h.want)
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// settle applies the newest settings asked.
func (l *replayLoop) settle() {
	h := l.h
	h.mu.Lock()
	r := h.want
	h.want = request{}
	h.mu.Unlock()
	if r.window > 0 {
		l.window = r.window
		l.pl.p.engine.SetWindow(r.window)
	}
	if r.slo != nil {
		l.slo = r.slo
		l.pl.p.detector.SetSLO(*r.slo)
	}
}

func (h *ReplayHub) ReplayState() ui.ReplayState {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.state
	st.Marks = append([]ui.ReplayMark(nil), h.state.Marks...)
	return st
}

func (h *ReplayHub) TogglePause() { h.send(func(l *replayLoop) { l.setPaused(!l.paused) }) }
func (h *ReplayHub) Step() {
	h.send(func(l *replayLoop) { l.setPaused(true); l.advance(time.Time{}, true) })
}
func (h *ReplayHub) SeekBy(d time.Duration) {
	h.send(func(l *replayLoop) {
		if l.shown != nil {
			l.seek(l.shown.Time.Add(d))
		}
	})
}

func (h *ReplayHub) SeekFraction(f float64) {
	h.send(func(l *replayLoop) {
		st := h.ReplayState()
		if !st.End.IsZero() {
			l.seek(st.Start.Add(time.Duration(f * float64(st.End.Sub(st.Start)))))
		}
	})
}

func (h *ReplayHub) SeekFinding(next bool) {
	h.send(func(l *replayLoop) {
		if l.shown == nil {
			return
		}
		now := l.shown.Time
		marks := h.ReplayState().Marks
		if next {
			for _, m := range marks {
				if m.At.After(now) {
					l.seek(m.At)
					return
				}
			}
			return
		}
		for i := len(marks) - 1; i >= 0; i-- {
			if marks[i].At.Before(now) {
				l.seek(marks[i].At)
				return
			}
		}
	})
}

func (h *ReplayHub) Faster(up bool) {
	h.send(func(l *replayLoop) {
		i := 0
		for i < len(replaySpeeds)-1 && replaySpeeds[i] < l.speed {
			i++
		}
		if up && i < len(replaySpeeds)-1 {
			i++
		} else if !up && i > 0 {
			i--
		}
		l.speed = replaySpeeds[i]
		l.anchor()
		l.publishState()
	})
}

// replayLoop is the playing goroutine's state.
type replayLoop struct {
	h       *ReplayHub
	pl      *Player
	pending *diagnose.Frame // evaluated, not yet due
	shown   *diagnose.Frame
	speed   int
	paused  bool
	ended   bool
	window  time.Duration // the UI's window, kept over a rewind
	slo     *diagnose.SLO // the UI's SLO profile, kept over a rewind
	wallAt  time.Time     // playback anchor: at wall time wallAt the data time was dataAt
	dataAt  time.Time
}

// Run plays pl from at (the start when zero) until ctx ends; the frames
// channel is closed then.
func (h *ReplayHub) Run(ctx context.Context, pl *Player, at time.Time) {
	defer close(h.frames)
	go h.scan(ctx)
	l := &replayLoop{h: h, pl: pl, speed: h.state.Speed}
	if at.IsZero() {
		l.advance(time.Time{}, true)
	} else {
		l.seek(at)
	}
	l.anchor()
	t := time.NewTicker(replayTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			pl.Close()
			return
		case <-h.wake:
			l.settle()
			if l.shown != nil {
				// The newest evaluation judged again with the new setting
				// and shown now, paused or not: at the shown frame's time,
				// or one evaluation on when the next was already made.
				l.pending = nil
				l.show(l.pl.reevaluate())
				l.anchor()
			}
		case f := <-h.cmds:
			f(l)
			l.anchor()
			l.publishState()
			if l.shown != nil {
				l.show(l.shown) // a frame message makes the UI draw the new state
			}
		case now := <-t.C:
			if !l.paused && !l.ended {
				l.advance(l.dataAt.Add(now.Sub(l.wallAt)*time.Duration(l.speed)), false)
			}
		}
	}
}

// advance shows every frame due by target (one frame when one is set).
func (l *replayLoop) advance(target time.Time, one bool) {
	for {
		if l.pending == nil {
			if !l.pl.Next() {
				l.ended, l.paused = true, true
				l.publishState()
				return
			}
			l.pending = l.pl.frame
		}
		if !one && l.pending.Time.After(target) {
			return
		}
		l.show(l.pending)
		l.pending = nil
		if one {
			return
		}
	}
}

// seek shows the last evaluation at or before to (the first one when to
// is before it). Going back replays from the start.
func (l *replayLoop) seek(to time.Time) {
	if l.shown != nil && to.Before(l.shown.Time) {
		if err := l.pl.rewind(); err != nil {
			l.h.mu.Lock()
			l.h.state.Note = err.Error()
			l.h.mu.Unlock()
			return
		}
		if l.window > 0 {
			l.pl.p.engine.SetWindow(l.window)
		}
		if l.slo != nil {
			l.pl.p.detector.SetSLO(*l.slo)
		}
		l.pending, l.ended = nil, false
	}
	if l.pending != nil && l.pending.Time.After(to) {
		return // already there: the next frame is past to
	}
	fr := l.pl.Until(to)
	l.pending = nil
	if l.pl.frame != nil && l.pl.frame != fr && l.pl.frame.Time.After(to) {
		l.pending = l.pl.frame
	}
	if fr == nil {
		if l.pending == nil {
			l.ended = true
			return
		}
		fr, l.pending = l.pending, nil
	}
	l.ended = l.pl.ended && l.pending == nil
	l.show(fr)
}

func (l *replayLoop) setPaused(p bool) {
	l.paused = p
	if !p && l.ended {
		l.paused = true // nothing more to play
	}
}

// anchor restarts playback pacing from the shown frame.
func (l *replayLoop) anchor() {
	l.wallAt = time.Now()
	if l.shown != nil {
		l.dataAt = l.shown.Time
	}
}

func (l *replayLoop) show(fr *diagnose.Frame) {
	l.shown = fr
	select {
	case <-l.h.frames:
	default:
	}
	l.h.frames <- fr
	l.publishState()
}

func (l *replayLoop) publishState() {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	h.state.Speed, h.state.Paused, h.state.Ended = l.speed, l.paused, l.ended
	if l.shown != nil {
		h.state.At = l.shown.Time
	}
	if l.ended && l.pl.stop != nil {
		h.state.Note = l.pl.stop.Error()
	}
}

// scan runs the whole recording once in the background for its start,
// end and the times findings fired or worsened.
func (h *ReplayHub) scan(ctx context.Context) {
	pl, err := OpenPlayer(h.files, h.maxSamples, h.slo)
	if err != nil {
		return
	}
	defer pl.Close()
	var marks []ui.ReplayMark
	var start, end time.Time
	prev := map[string]diagnose.Severity{}
	for pl.Next() {
		if ctx.Err() != nil {
			return
		}
		fr := pl.frame
		if start.IsZero() {
			start = fr.Time
		}
		end = fr.Time
		cur := map[string]diagnose.Severity{}
		for _, f := range fr.Findings {
			k := f.Rule + "\x00" + f.Target + "\x00" + f.Model + "\x00" + f.Engine
			cur[k] = f.Severity
			if was, ok := prev[k]; (!ok || f.Severity > was) && f.Severity > diagnose.SevInfo {
				marks = append(marks, ui.ReplayMark{At: fr.Time, Severity: f.Severity})
			}
		}
		prev = cur
	}
	h.mu.Lock()
	h.state.Start, h.state.End, h.state.Marks = start, end, marks
	h.mu.Unlock()
}
