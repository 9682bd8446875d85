package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

// The poller's path with --record: each body is normalized, only its changed
// lines are kept (Scrape.Lines), the newest-wins mailbox drops scrapes the
// pipeline did not take in time, fetches and parses fail, a body changes
// shape, the file rotates; every body read back from the files is the body
// that scrape fetched, byte for byte.
func TestRecordChangedLines(t *testing.T) {
	cfgs := []sim.ReplicaConfig{
		{Name: "a:8000", Scenarios: []sim.ScenarioSpec{{Name: "busy"}}},
		{Name: "b:8000", Profile: "v0.6", Scenarios: []sim.ScenarioSpec{{Name: "restart", Delay: 30 * time.Second}}},
		{Name: "c:8000", Profile: "v0.11", DP: 2},
	}
	formats := []sim.Format{sim.FormatText, sim.FormatOpenMetrics, sim.FormatText}
	fl, err := sim.NewFleet(sim.FleetConfig{Replicas: cfgs}, 3)
	if err != nil {
		t.Fatal(err)
	}
	var targets []sources.Target
	norms := make([]*sources.Normalizer, len(cfgs))
	for i, c := range cfgs {
		targets = append(targets, sources.Target{Name: c.Name, URL: "http://" + c.Name + "/metrics"})
		norms[i] = sources.NewNormalizer()
	}
	path := filepath.Join(t.TempDir(), "rec.vtop")
	w, err := Create(path, Header{Started: t0, Interval: Duration(time.Second)}, targets, 400<<10)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		target string
		at     int64
	}
	want := map[key][]byte{}
	r := rand.New(rand.NewPCG(5, 5))
	box := sources.NewMailbox(len(cfgs))
	lines, recorded := 0, 0
	for sec := 0; sec < 240; sec++ {
		fl.Advance(time.Second)
		for i, c := range cfgs {
			at := fl.Now().Add(time.Duration(i) * time.Millisecond)
			s := sources.Scrape{Target: c.Name, Time: at}
			body := fl.Replicas()[i].Exposition(formats[i])
			switch r.IntN(20) {
			case 0: // the fetch failed: the normalizer saw nothing
				s.Err = errors.New("connection refused")
				box.Put(i, 0, s)
				continue
			case 1: // a body that does not parse
				body = append(body, "garbage{\n"...)
			case 2: // a body of another shape: a line gone
				lines := bytes.Split(body, []byte("\n"))
				k := r.IntN(len(lines))
				body = bytes.Join(append(lines[:k:k], lines[k+1:]...), []byte("\n"))
			}
			snap, err := norms[i].Normalize(body, formats[i].ContentType())
			if err != nil {
				s.Err = err
			} else {
				s.Data = snap
				s.KeepBody(norms[i], body, formats[i].ContentType())
				if s.Lines != nil {
					lines++
				}
				want[key{c.Name, at.UnixNano()}] = body
			}
			box.Put(i, 0, s)
		}
		if r.IntN(3) == 0 {
			continue // the pipeline was busy: newer scrapes replace these
		}
		for _, got := range box.Take(nil) {
			w.Scrape(&got.Scrape)
		}
		w.Tick(fl.Now())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.rotations == 0 || lines == 0 {
		t.Fatalf("%d rotations, %d scrapes given by their lines: the test covers neither", w.rotations, lines)
	}
	for _, p := range []string{path + ".1", path} {
		rd, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		for {
			ev, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if ev.Kind != KindScrape || ev.Err != "" {
				continue
			}
			name := rd.Header().Targets[ev.Target].Name
			b, ok := want[key{name, ev.Time.UnixNano()}]
			if !ok {
				t.Fatalf("%s: a body for %s at %v that was not scraped", p, name, ev.Time)
			}
			if !bytes.Equal(b, ev.Body) {
				t.Fatalf("%s: %s at %v reads back as another body:\n%s", p, name, ev.Time, firstDiff(b, ev.Body))
			}
			recorded++
		}
		rd.Close()
	}
	t.Logf("%d rotations, %d scrapes given by lines, %d bodies read back", w.rotations, lines, recorded)
	if recorded < 100 {
		t.Fatalf("only %d bodies read back", recorded)
	}
}

func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for k := 0; k < max(len(la), len(lb)); k++ {
		var x, y []byte
		if k < len(la) {
			x = la[k]
		}
		if k < len(lb) {
			y = lb[k]
		}
		if !bytes.Equal(x, y) {
			return fmt.Sprintf("line %d: want %q\n          got %q", k, x, y)
		}
	}
	return "(same lines)"
}
