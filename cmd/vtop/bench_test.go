package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/vtop-dev/vtop/app"
	"github.com/vtop-dev/vtop/ui"
)

// BenchmarkKeyToScreenPolled1000: key press to the next frame on the wire
// while the real pipeline polls 1,000 simulated engines once a second (a
// `vtop sim` process on loopback) and the hub publishes a frame of all of
// them every second. The program is set up as watch sets it up, with the
// output going to a pipe instead of a terminal. The clock stops when the
// moved selection marker has been written out.
//
//	go test -run '^$' -bench KeyToScreenPolled1000 -benchtime 400x ./cmd/vtop
func BenchmarkKeyToScreenPolled1000(b *testing.B) {
	bin := vtopBinary(b)
	urls := simFleet(b, bin, "--replicas", "1000", "--scenario", "healthy")
	o, _, err := resolve(append([]string{"--interval", "1s", "--max-parallel", "128", "--gpu", "none"}, urls...), noEnv)
	if err != nil {
		b.Fatal(err)
	}
	p, err := newPipeline(o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := app.NewHub(p)
	go h.Run(ctx, o.interval)
	pr, pw := io.Pipe()
	prog := tea.NewProgram(ui.New(h, ui.Options{Window: o.window}), tea.WithInput(nil), tea.WithOutput(pw),
		tea.WithFPS(renderFPS), tea.WithoutSignalHandler(), tea.WithContext(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		prog.Run()
	}()
	out := make(chan []byte, 4096)
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
	waitFor := func(s string, d time.Duration) {
		var seen []byte
		timeout := time.After(d)
		for {
			select {
			case chunk := <-out:
				seen = append(seen, chunk...)
				if bytes.Contains(seen, []byte(s)) {
					return
				}
				if len(seen) > 1<<20 {
					seen = seen[len(seen)-(64<<10):]
				}
			case <-timeout:
				b.Fatalf("no %q after %s", s, d)
			}
		}
	}
	prog.Send(tea.WindowSizeMsg{Width: 200, Height: 60})
	waitFor("1000/1000 up", 60*time.Second)
	names := slices.Clone(urls)
	slices.Sort(names)
	keys := [2]tea.KeyMsg{{Type: tea.KeyRunes, Runes: []rune("j")}, {Type: tea.KeyRunes, Runes: []rune("k")}}
	want := [2]string{"›  " + names[1] + " ", "›  " + names[0] + " "}
	i := 0
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		prog.Send(keys[i%2])
		waitFor(want[i%2], 5*time.Second)
		lat = append(lat, time.Since(t0))
		i++
	}
	b.StopTimer()
	reportLatency(b, lat)
	cancel()
	go func() {
		for range out {
		}
	}()
	<-done
	pw.Close()
}

// reportLatency adds the median, p99 and worst key-to-screen time.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	over := 0
	for _, d := range lat {
		if d >= 16*time.Millisecond {
			over++
		}
	}
	b.ReportMetric(100*float64(over)/float64(len(lat)), "%≥16ms")
}
