package ui

import (
	"bytes"
	"io"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/vtop-dev/vtop/diagnose"
	"testing"
)

// The budgets: View() at 200×60 with 50 endpoints ≤ 2 ms, applying
// a 50-endpoint frame ≤ 2 ms, key press to the next frame < 16 ms with 1,000
// endpoints. Figures and commands: BENCHMARKS.md, "Terminal UI".

func benchModel(b *testing.B, n int, keys ...string) (*Model, [2]*diagnose.Frame) {
	b.Helper()
	frames := [2]*diagnose.Frame{
		fixtureFrame(fixtureOpts{endpoints: n, gpus: 8, findings: true}),
		fixtureFrame(fixtureOpts{endpoints: n, gpus: 8, findings: true}),
	}
	frames[1].Time = frames[1].Time.Add(1e9)
	m := newTestModel(frames[0], 200, 60, Options{})
	press(m, keys...)
	return m, frames
}

// View joins what Update prepared: this is the cost of every redraw.
func BenchmarkView200x60(b *testing.B) {
	for _, c := range []struct {
		name string
		keys []string
	}{{"fleet", nil}, {"endpoint", []string{"enter"}}} {
		b.Run(c.name, func(b *testing.B) {
			m, _ := benchModel(b, 50, c.keys...)
			b.ReportAllocs()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}

// A frame arrives: table order, row cache, panels and sparklines rendered.
func BenchmarkApplyFrame50(b *testing.B) {
	for _, c := range []struct {
		name string
		keys []string
	}{{"fleet", nil}, {"endpoint", []string{"enter"}}} {
		b.Run(c.name, func(b *testing.B) {
			m, frames := benchModel(b, 50, c.keys...)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				m.Update(frameMsg{frames[i%2]})
			}
		})
	}
}

// A key press with 1,000 endpoints: Update (cursor move, rows re-rendered
// from the cache) then View, which is what the renderer draws next.
func BenchmarkKeyPress1000(b *testing.B) {
	m, _ := benchModel(b, 1000)
	keys := [2]string{"j", "k"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		m.Update(keyMsg(keys[i%2]))
		_ = m.View()
	}
}

// For scale: a 1,000-endpoint frame (sort, layout) and a resize.
func BenchmarkApplyFrame1000(b *testing.B) {
	m, frames := benchModel(b, 1000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		m.Update(frameMsg{frames[i%2]})
	}
}

// Key press to the next frame on the wire: a real bubbletea program (its
// renderer at 120 frames/s, as cmd/vtop runs it) with 1,000 endpoints;
// the clock stops when the moved selection marker has been written out.
func BenchmarkKeyToScreen1000(b *testing.B) {
	h := newFrameHub()
	r := runProgram(b, New(h, Options{Tick: -1}))
	p, waitFor := r.p, r.waitFor
	p.Send(tea.WindowSizeMsg{Width: 200, Height: 60})
	h.ch <- fixtureFrame(fixtureOpts{endpoints: 1000, gpus: 8, findings: true})
	waitFor(symSel + symExpand + " replica-1 ") // the worst first
	keys := [2]string{"j", "k"}
	want := [2]string{symSel + "  replica-", symSel + symExpand + " replica-1 "}
	i := 0
	for b.Loop() {
		p.Send(keyMsg(keys[i%2]))
		waitFor(want[i%2])
		i++
	}
	b.StopTimer()
	r.stop()
}

// benchProgram is a bubbletea program on a pipe, as cmd/vtop runs the
// TUI (the standard renderer at 120 frames/s), whose output a benchmark
// waits on.
type benchProgram struct {
	p       *tea.Program
	waitFor func(string) // until s has been written out
	stop    func()       // quits the program and drains its output
}

func runProgram(b *testing.B, m tea.Model) benchProgram {
	pr, pw := io.Pipe()
	p := tea.NewProgram(m, tea.WithInput(nil), tea.WithOutput(pw), tea.WithFPS(120), tea.WithoutSignalHandler())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run()
	}()
	out := make(chan []byte, 1024)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := pr.Read(buf)
			if err != nil {
				close(out)
				return
			}
			out <- bytes.Clone(buf[:n])
		}
	}()
	waitFor := func(s string) {
		var seen []byte
		timeout := time.After(10 * time.Second)
		for {
			select {
			case chunk, ok := <-out:
				if !ok {
					b.Fatalf("output ended before %q", s)
				}
				seen = append(seen, chunk...)
				if bytes.Contains(seen, []byte(s)) {
					return
				}
			case <-timeout:
				b.Fatalf("no %q in %q", s, seen[max(0, len(seen)-3000):])
			}
		}
	}
	stop := func() {
		p.Quit()
		go func() {
			for range out {
			}
		}()
		<-done
		pw.Close()
	}
	return benchProgram{p: p, waitFor: waitFor, stop: stop}
}

// inlineFrames is the model as it ran before frames were prepared aside:
// each frame applied and rendered in Update, on the UI goroutine. Only
// for the side-by-side below.
type inlineFrames struct{ *Model }

func (w inlineFrames) Init() tea.Cmd {
	c := w.Model.Init()
	w.Model.prep.on = false
	return c
}

func (w inlineFrames) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, c := w.Model.Update(msg)
	return w, c
}

// colTitle is in the fleet table's column titles.
const colTitle = "worst finding"

// Key to screen with 1,000 endpoints while frames keep coming (every
// 100 ms, ten times the live rate, so that keys often land on one): the
// program as it runs (frames prepared aside) and with frames applied in
// Update, one after the other in the same run; p50 and p99 of the presses.
//
//	go test -run '^$' -bench KeyBehindFrames1000 -count 3 ./ui
func BenchmarkKeyBehindFrames1000(b *testing.B) {
	for _, c := range []struct {
		name string
		wrap func(*Model) tea.Model
	}{
		{"aside", func(m *Model) tea.Model { return m }},
		{"inline", func(m *Model) tea.Model { return inlineFrames{m} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := newFrameHub()
			r := runProgram(b, c.wrap(New(h, Options{Tick: -1})))
			p, waitFor := r.p, r.waitFor
			p.Send(tea.WindowSizeMsg{Width: 200, Height: 60})
			frames := [2]*diagnose.Frame{
				fixtureFrame(fixtureOpts{endpoints: 1000, gpus: 8, findings: true}),
				fixtureFrame(fixtureOpts{endpoints: 1000, gpus: 8, findings: true}),
			}
			frames[1].Time = frames[1].Time.Add(time.Second)
			h.ch <- frames[0]
			waitFor(colTitle)
			stop := make(chan struct{})
			fed := make(chan struct{})
			go func() {
				defer close(fed)
				t := time.NewTicker(100 * time.Millisecond)
				defer t.Stop()
				for i := 1; ; i++ {
					select {
					case <-stop:
						return
					case <-t.C:
					}
					select {
					case h.ch <- frames[i%2]:
					default: // the UI has not taken the last one: newest wins at the hub
					}
				}
			}()
			// The help and back, as scripts/keytime.py presses: markers no
			// frame redraws while the screen stays as it is.
			keys := [2]string{"?", "esc"}
			want := [2]string{"Symbols", colTitle}
			var ms []float64
			i := 0
			for b.Loop() {
				t0 := time.Now()
				p.Send(keyMsg(keys[i%2]))
				waitFor(want[i%2])
				ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
				i++
				time.Sleep(time.Duration(7+i%50) * time.Millisecond) // presses at no fixed phase to the frames
			}
			b.StopTimer()
			close(stop)
			<-fed
			r.stop()
			slices.Sort(ms)
			q := func(f float64) float64 { return ms[min(len(ms)-1, int(f*float64(len(ms))))] }
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
		})
	}
}
