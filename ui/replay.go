package ui

import (
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/vtop-dev/vtop/diagnose"
)

// Player is a Hub that plays a recording (vtop replay). The model then
// shows a timeline in place of the footer and takes the playback keys.
type Player interface {
	Hub
	ReplayState() ReplayState
	TogglePause()
	Step()                  // one evaluation forward, then paused
	SeekBy(d time.Duration) // relative to the shown frame
	SeekFraction(f float64) // 0: the start, 1: the end
	SeekFinding(next bool)  // to the next / previous time a finding fired
	Faster(up bool)         // the next speed up or down
}

// ReplayState is where playback stands, for the timeline.
type ReplayState struct {
	Start, End time.Time // End is zero until the recording has been scanned
	At         time.Time // the frame shown
	Speed      int       // times real time
	Paused     bool
	Ended      bool         // at the last evaluation
	Marks      []ReplayMark // when findings fired, oldest first
	Note       string       // where a damaged recording stopped
}

// ReplayMark is a finding firing (or worsening) at a time.
type ReplayMark struct {
	At       time.Time
	Severity diagnose.Severity
}

// replayBar is the replay component: its keys and its one line.
type replayBar struct {
	p    Player
	keys replayKeys
}

type replayKeys struct {
	Pause, Step, Back, Fwd, PrevFind, NextFind, Slower, Faster, Jump binding
}

func newReplayBar(h Hub) *replayBar {
	p, ok := h.(Player)
	if !ok {
		return nil
	}
	b := func(help, short, desc string, keys ...string) binding {
		return binding{key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc)), short}
	}
	return &replayBar{p: p, keys: replayKeys{
		Pause:    b("p", "play", "replay: pause / play", "p"),
		Step:     b(".", "step", "replay: one evaluation forward", "."),
		Back:     b("←", "-10s", "replay: back 10 s (shift: 1 min)", "left", "shift+left"),
		Fwd:      b("→", "+10s", "replay: forward 10 s (shift: 1 min)", "right", "shift+right"),
		PrevFind: b("[", "finding", "replay: to the previous finding", "["),
		NextFind: b("]", "finding", "replay: to the next finding", "]"),
		Slower:   b("<", "slower", "replay: slower (×1 … ×60)", "<", ","),
		Faster:   b(">", "faster", "replay: faster", ">"),
		Jump:     b("0-9", "jump", "replay: jump to 0 %, 10 % … 90 % of the recording", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"),
	}}
}

func (r *replayBar) helpGroup() helpGroup {
	k := &r.keys
	return helpGroup{"Replay", []binding{k.Pause, k.Step, k.Back, k.Fwd, k.PrevFind, k.NextFind, k.Slower, k.Faster, k.Jump}}
}

// key handles a playback key; false when k is not one.
func (r *replayBar) key(k tea.KeyMsg) bool {
	if r == nil {
		return false
	}
	kk := &r.keys
	step := 10 * time.Second
	if strings.HasPrefix(k.String(), "shift+") {
		step = time.Minute
	}
	switch {
	case kk.Pause.matches(k):
		r.p.TogglePause()
	case kk.Step.matches(k):
		r.p.Step()
	case kk.Back.matches(k):
		r.p.SeekBy(-step)
	case kk.Fwd.matches(k):
		r.p.SeekBy(step)
	case kk.PrevFind.matches(k):
		r.p.SeekFinding(false)
	case kk.NextFind.matches(k):
		r.p.SeekFinding(true)
	case kk.Slower.matches(k):
		r.p.Faster(false)
	case kk.Faster.matches(k):
		r.p.Faster(true)
	case kk.Jump.matches(k):
		r.p.SeekFraction(float64(k.String()[0]-'0') / 10)
	default:
		return false
	}
	return true
}

// render is the timeline: play state and speed, the shown time, a bar with
// the findings marked (▲ warning, ✖ critical, ● now) and the end time.
func (r *replayBar) render(w int, s *styles) string {
	st := r.p.ReplayState()
	state := "▶ ×" + itoa(st.Speed)
	switch {
	case st.Ended:
		state = "■ end"
	case st.Paused:
		state = "⏸ ×" + itoa(st.Speed)
	}
	left := s.accent.s("replay "+state) + " " + s.text.s(st.At.UTC().Format("15:04:05")) + " "
	end := "--:--:--"
	if !st.End.IsZero() {
		end = st.End.UTC().Format("15:04:05")
	}
	right := " " + s.text.s(end) + s.muted.s("  [ ] finding · ←→ seek · <> speed · . step · ? keys")
	if st.Note != "" {
		right = " " + s.text.s(end) + " " + s.warn.s("damaged: "+st.Note)
	}
	barW := w - width(left) - width(right)
	if barW < 10 {
		right = " " + s.text.s(end)
		barW = w - width(left) - width(right)
	}
	if barW < 4 {
		return cut(left, w)
	}
	return cut(left+r.bar(st, barW, s)+right, w)
}

func (r *replayBar) bar(st ReplayState, n int, s *styles) string {
	cells := make([]string, n)
	for i := range cells {
		cells[i] = s.muted.s("─")
	}
	span := st.End.Sub(st.Start)
	pos := func(t time.Time) int {
		if span <= 0 {
			return 0
		}
		i := int(float64(t.Sub(st.Start)) / float64(span) * float64(n-1))
		return min(max(i, 0), n-1)
	}
	sev := make([]diagnose.Severity, n)
	has := make([]bool, n)
	for _, m := range st.Marks {
		i := pos(m.At)
		if !has[i] || m.Severity > sev[i] {
			sev[i], has[i] = m.Severity, true
		}
	}
	for i := range cells {
		if !has[i] {
			continue
		}
		switch sev[i] {
		case diagnose.SevCritical:
			cells[i] = s.crit.s(symCrit)
		case diagnose.SevWarning:
			cells[i] = s.warn.s(symWarn)
		default:
			cells[i] = s.info.s(symInfo)
		}
	}
	if !st.End.IsZero() {
		cells[pos(st.At)] = s.accent.s("●")
	}
	return strings.Join(cells, "")
}
