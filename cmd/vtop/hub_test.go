package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/app"
	"github.com/vtop-dev/vtop/diagnose"
)

// The hub applies the UI's commands on its goroutine and publishes a frame
// for each; its channel closes when it stops.
func TestHubCommands(t *testing.T) {
	o, _, err := resolve([]string{"--interval", "100ms", "--window", "1s", "--gpu", "none", movingServer(t, "m")}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPipeline(o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h := app.NewHub(p)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		h.Run(ctx, o.interval)
		close(done)
	}()
	waitFrame := func(what string, ok func(*diagnose.Frame) bool) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case fr := <-h.Frames():
				if ok(fr) {
					return
				}
			case <-deadline:
				t.Fatalf("no frame with %s", what)
			}
		}
	}
	waitFrame("the endpoint up", func(fr *diagnose.Frame) bool { return fr.Fleet.Up == 1 && fr.Window == time.Second })
	h.SetWindow(3 * time.Second)
	waitFrame("the new window", func(fr *diagnose.Frame) bool { return fr.Window == 3*time.Second })
	code, err := diagnose.FindSLO(o.rules.Profiles, "code")
	if err != nil {
		t.Fatal(err)
	}
	h.SetSLO(code)
	waitFrame("findings judged by the code profile", func(fr *diagnose.Frame) bool { return fr.SLO.Name == "code" })
	h.PollNow()
	cancel()
	<-done
	for range h.Frames() {
	}
}
