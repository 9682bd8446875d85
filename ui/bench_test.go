package ui

import (
	"bytes"
	"io"
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
	m := New(h, Options{Tick: -1})
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
	p.Send(tea.WindowSizeMsg{Width: 200, Height: 60})
	h.ch <- fixtureFrame(fixtureOpts{endpoints: 1000, gpus: 8, findings: true})
	waitFor(symSel + "  replica-0 ")
	keys := [2]string{"j", "k"}
	want := [2]string{symSel + symExpand + " replica-1 ", symSel + "  replica-0 "}
	i := 0
	for b.Loop() {
		p.Send(keyMsg(keys[i%2]))
		waitFor(want[i%2])
		i++
	}
	b.StopTimer()
	p.Quit()
	go func() {
		for range out {
		}
	}()
	<-done
	pw.Close()
}
