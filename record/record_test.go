package record

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

var t0 = time.Date(2026, 11, 24, 4, 0, 0, 0, time.UTC)

// fixture is a small recording: two targets scraped 30 times with rising
// counters (one target fails every 7th time), GPU readings with unknown
// fields, a process tree and an evaluation tick per second.
type fixture struct {
	hdr    Header
	live   []sources.Target
	events []Event
}

func readDump(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "dumps", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newFixture(t testing.TB) fixture {
	a := readDump(t, "Ahasannn-hardware-aware-router__v0.11.0_full.txt")
	b := readDump(t, "vllm-project-production-stack-issue-617__v0.10.0_fragment.txt")
	fx := fixture{hdr: Header{VtopVersion: "test", Started: t0, Interval: Duration(time.Second), Window: Duration(time.Minute),
		Config: []byte(`{"slo":"chat"}`)},
		live: []sources.Target{{Name: "a:8000", URL: "http://a:8000/metrics"}, {Name: "b:8000", URL: "http://b:8000/metrics", MaxNumSeqs: 256}}}
	fx.events = append(fx.events, Event{Kind: KindProcs, Target: 1, Procs: sources.ProcTree{Root: 42, RootName: "vllm", PIDs: []int{42, 43}, MemLimit: 64 << 30, MemLimitFrom: "cgroup memory limit"}})
	// A remote endpoint's GPUs (dcgm-exporter's join), as a --prometheus or --dcgm run has them.
	fx.events = append(fx.events, Event{Kind: KindProcs, Target: 0, Procs: sources.ProcTree{Note: "held by pod", GPUs: []string{"GPU-6f1e", "GPU-77aa"}}})
	for s := 0; s < 30; s++ {
		at := t0.Add(time.Duration(s) * time.Second)
		for i, body := range [][]byte{a, b} {
			ev := Event{Kind: KindScrape, Target: i, Time: at.Add(time.Duration(i) * time.Millisecond), Duration: 3 * time.Millisecond,
				ContentType: "text/plain; version=0.0.4"}
			if i == 1 && s%7 == 3 {
				ev.ContentType, ev.Err = "", "connection refused (is vLLM running on this port?)"
			} else {
				// Rising numbers on some lines, as a live endpoint's.
				ev.Body = bytes.ReplaceAll(body, []byte(" 0\n"), []byte(fmt.Sprintf(" %d\n", s*s)))
			}
			fx.events = append(fx.events, ev)
		}
		fx.events = append(fx.events, Event{Kind: KindGPU, Time: at, GPU: sources.GPUSnapshot{Time: at, Source: "NVML (driver 550)",
			GPUs: []sources.GPU{{Index: 0, Name: "H100", UtilGPU: float64(s % 100), MemUsed: 1e9 * float64(s), MemTotal: 80e9,
				TempC: math.NaN(), PowerW: math.Inf(1), ClockEvents: []string{"thermal"}, Processes: []sources.GPUProcess{{PID: 43, Name: "VLLM::EngineCore", UsedBytes: math.NaN()}}}},
			Events: []sources.GPUEvent{{Time: at, GPU: 0, XID: 79, Text: "fell off the bus", Level: "critical"}}}})
		fx.events = append(fx.events, Event{Kind: KindTick, Time: at.Add(500 * time.Millisecond)})
	}
	return fx
}

func (fx fixture) write(t testing.TB, w *Writer) {
	for _, ev := range fx.events {
		switch ev.Kind {
		case KindScrape:
			var err error
			if ev.Err != "" {
				err = errors.New(ev.Err)
			}
			w.Scrape(&sources.Scrape{Target: fx.live[ev.Target].Name, Time: ev.Time, Duration: ev.Duration, ContentType: ev.ContentType, Body: ev.Body, Err: err})
		case KindGPU:
			w.GPU(&ev.GPU)
		case KindProcs:
			w.Procs(fx.live[ev.Target].Name, ev.Procs)
		case KindTick:
			w.Tick(ev.Time)
		}
	}
}

func (fx fixture) bytes(t testing.TB) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, fx.hdr, fx.live)
	if err != nil {
		t.Fatal(err)
	}
	fx.write(t, w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// same compares a read event with a written one (NaN equal to NaN).
func same(t testing.TB, k int, got *Event, want Event) {
	t.Helper()
	gw, ww := toWire(&got.GPU), toWire(&want.GPU)
	gj, _ := json.Marshal(gw)
	wj, _ := json.Marshal(ww)
	procsTime := want.Kind == KindProcs // a process tree carries the time of the frame before it
	if got.Kind != want.Kind || (!procsTime && !got.Time.Equal(want.Time)) || got.Target != want.Target ||
		got.Duration != want.Duration || got.ContentType != want.ContentType || !bytes.Equal(got.Body, want.Body) ||
		got.Err != want.Err || !bytes.Equal(gj, wj) || !reflect.DeepEqual(got.Procs, want.Procs) {
		t.Fatalf("event %d: got kind %d at %v target %d (%d body bytes) err %q gpu %s procs %+v\nwant kind %d at %v target %d (%d body bytes) err %q gpu %s procs %+v",
			k, got.Kind, got.Time, got.Target, len(got.Body), got.Err, gj, got.Procs, want.Kind, want.Time, want.Target, len(want.Body), want.Err, wj, want.Procs)
	}
}

func readAll(t testing.TB, data []byte) ([]*Event, error) {
	r, err := NewReader(bytes.NewReader(data), "test.vtop")
	if err != nil {
		return nil, err
	}
	var out []*Event
	for {
		ev, err := r.Next()
		if err != nil {
			return out, err
		}
		c := *ev
		c.Body = append([]byte(nil), ev.Body...)
		out = append(out, &c)
	}
}

func TestRoundTrip(t *testing.T) {
	fx := newFixture(t)
	data := fx.bytes(t)
	r, err := NewReader(bytes.NewReader(data), "x")
	if err != nil {
		t.Fatal(err)
	}
	h := r.Header()
	if h.Format != Version || h.VtopVersion != "test" || len(h.Targets) != 2 || h.Targets[1].MaxNumSeqs != 256 ||
		string(h.Config) != `{"slo":"chat"}` || time.Duration(h.Interval) != time.Second {
		t.Fatalf("header %+v", h)
	}
	evs, err := readAll(t, data)
	if err != io.EOF {
		t.Fatalf("ended with %v, want io.EOF", err)
	}
	if len(evs) != len(fx.events) {
		t.Fatalf("%d events, wrote %d", len(evs), len(fx.events))
	}
	for k := range evs {
		same(t, k, evs[k], fx.events[k])
	}
	var raw int
	for _, ev := range fx.events {
		raw += len(ev.Body)
	}
	t.Logf("%d bytes of bodies in %d bytes (%.1f×)", raw, len(data), float64(raw)/float64(len(data)))
	if len(data)*20 > raw {
		t.Errorf("%d bytes of bodies took %d bytes: the delta is not working", raw, len(data))
	}
}

// A file cut anywhere replays every whole frame before the cut and says
// where it stopped; a flipped byte stops the replay at its frame.
func TestTruncatedAndCorrupt(t *testing.T) {
	fx := newFixture(t)
	data := fx.bytes(t)
	step := 7 // every byte takes seconds under -race; 7 is prime to the frame sizes
	if testing.Short() {
		step = 97
	}
	for cut := 0; cut < len(data); cut += step {
		evs, err := readAll(t, data[:cut])
		var d *Damage
		if !errors.As(err, &d) {
			if evs == nil && err != nil && strings.Contains(err.Error(), "test.vtop") {
				continue // cut inside the magic or the header: not a recording yet
			}
			t.Fatalf("cut at %d: %v, want *Damage", cut, err)
		}
		if d.Offset > int64(cut) || len(evs) > len(fx.events) {
			t.Fatalf("cut at %d: damage %+v after %d events", cut, d, len(evs))
		}
		for k := range evs {
			same(t, k, evs[k], fx.events[k])
		}
	}
	// The end frame cut off exactly: unfinished, nothing corrupt.
	evs, err := readAll(t, data[:len(data)-frameHead-len("closed")])
	var d *Damage
	if !errors.As(err, &d) || !d.Unfinished || len(evs) != len(fx.events) {
		t.Fatalf("without the end frame: %v after %d events", err, len(evs))
	}
	if !strings.Contains(d.Error(), "after 2026-11-24T04:00:29.500Z") {
		t.Errorf("message does not say how far it got: %v", d)
	}
	for _, at := range []int{len(data) / 3, len(data) / 2, len(data) - 20} {
		bad := bytes.Clone(data)
		bad[at] ^= 0x40
		evs, err := readAll(t, bad)
		if !errors.As(err, &d) || d.Offset > int64(at) {
			t.Fatalf("flip at %d: %v", at, err)
		}
		t.Logf("flip at %d: %v (%d events)", at, err, len(evs))
	}
}

func TestRotation(t *testing.T) {
	fx := newFixture(t)
	path := filepath.Join(t.TempDir(), "rec.vtop")
	const max = 16 << 10
	w, err := Create(path, fx.hdr, fx.live, max)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 4; k++ {
		fx.write(t, w)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.rotations < 2 {
		t.Fatalf("%d rotations", w.rotations)
	}
	var total int64
	for _, p := range []string{path + ".1", path} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
		// Each file replays on its own: whole bodies after its header.
		r, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			if _, err = r.Next(); err != nil {
				break
			}
			n++
		}
		if err != io.EOF || n == 0 {
			t.Fatalf("%s: %v after %d events", p, err, n)
		}
		r.Close()
	}
	if total > max+16<<10 {
		t.Errorf("files take %d bytes, over --record-max %d", total, max)
	}
	// Both parts in order replay as one recording.
	rp, err := OpenReplay([]string{path + ".1", path}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	n := 0
	for {
		it, err := rp.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if it.Kind == KindScrape && it.Scrape.Err == nil && it.Scrape.Data == nil {
			t.Fatalf("scrape without data or error: %+v", it.Scrape)
		}
		n++
	}
	if n == 0 {
		t.Fatal("nothing replayed")
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"gpu-node-1:8000":                         "gpu-node-1:8000",
		"https://h:8443/metrics?token=s3cret&x=1": "https://h:8443/metrics?token=REDACTED&x=REDACTED",
		"http://user:pw@h:8000/metrics":           "http://h:8000/metrics",
		"h:8000/metrics?access_token=abc#frag":    "h:8000/metrics?access_token=REDACTED",
		"http://h:8000/metrics#secret":            "http://h:8000/metrics",
		"http://h:8000/m?%zz=1":                   "http://h:8000/m",
	} {
		got := Redact(in)
		if got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
		for _, secret := range []string{"s3cret", "pw", "abc", "frag"} {
			if strings.Contains(got, secret) && !strings.Contains(want, secret) {
				t.Errorf("Redact(%q) kept %q", in, secret)
			}
		}
	}
}

func TestNewerFormatRefused(t *testing.T) {
	data := newFixture(t).bytes(t)
	data[7] = Version + 1
	_, err := NewReader(bytes.NewReader(data), "new.vtop")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("format %d", Version+1)) {
		t.Fatalf("got %v", err)
	}
	if _, err := NewReader(strings.NewReader("# HELP vllm:foo\n"), "m.txt"); err == nil || !strings.Contains(err.Error(), "not a vtop recording") {
		t.Fatalf("got %v", err)
	}
}

// A target that arrives mid-recording (discovered) gets its own frame; its
// scrapes replay under its name, through rotation too, and the Source
// announces it.
func TestTargetArrives(t *testing.T) {
	fx := newFixture(t)
	path := filepath.Join(t.TempDir(), "rec.vtop")
	w, err := Create(path, fx.hdr, fx.live, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	body := readDump(t, "vllm-project-production-stack-issue-617__v0.10.0_fragment.txt")
	c := sources.Target{Name: "https://c:8443/metrics?token=s3cret", URL: "https://c:8443/metrics?token=s3cret"}
	w.Target(c)
	w.Target(c) // known: once
	w.Scrape(&sources.Scrape{Target: c.Name, Time: t0.Add(time.Second), ContentType: "text/plain", Body: body})
	w.Scrape(&sources.Scrape{Target: "d:8000", Time: t0.Add(time.Second), ContentType: "text/plain", Body: body}) // first named by a scrape
	w.Departed("d:8000")
	w.Tick(t0.Add(time.Second))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if bytes.Contains(raw, []byte("s3cret")) {
		t.Fatal("the token reached the file")
	}
	src := NewSource([]string{path}, 0)
	out := make(chan sources.Batch, 4)
	if err := src.Run(context.Background(), out); err != nil || src.Stopped() != nil {
		t.Fatal(err, src.Stopped())
	}
	close(out)
	var names, scraped, departed []string
	for b := range out {
		departed = append(departed, b.Departed...)
		for _, a := range b.Arrived {
			names = append(names, a.Name)
		}
		for _, s := range b.Scrapes {
			scraped = append(scraped, s.Target)
		}
	}
	want := []string{"a:8000", "b:8000", "https://c:8443/metrics?token=REDACTED", "d:8000"}
	if !reflect.DeepEqual(names, want) || !reflect.DeepEqual(scraped, want[2:]) || !reflect.DeepEqual(departed, want[3:]) {
		t.Fatalf("arrived %q, scraped %q, departed %q", names, scraped, departed)
	}
}

// A process tree's memory limit is never negative: such a frame is damage
// (the replay stops there and says so), not a limit to project against.
func TestNegativeMemLimitIsDamage(t *testing.T) {
	fx := newFixture(t)
	fx.events = []Event{{Kind: KindProcs, Target: 1, Procs: sources.ProcTree{Root: 42, MemLimit: -1}}}
	evs, err := readAll(t, fx.bytes(t))
	var d *Damage
	if len(evs) != 0 || !errors.As(err, &d) || !strings.Contains(err.Error(), "memory limit") {
		t.Fatalf("%d events, error %v", len(evs), err)
	}
}

// A small fleet's ticks share a frame for up to batchSpan, and each frame
// reads on its own: what a file cut after any frame replays ends at a tick.
func TestSmallTicksShareAFrame(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{}, []sources.Target{{Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1795521360, 0)
	var ends []int // the file's size after each tick
	for s := range 12 {
		at := start.Add(time.Duration(s) * time.Second)
		w.Scrape(&sources.Scrape{Target: "a", Time: at, ContentType: "text/plain", Body: fmt.Appendf(nil, "x %d", s)})
		w.Tick(at)
		ends = append(ends, buf.Len())
	}
	// Written at the first tick, then 5 s after each written one.
	want := []int{0, 5, 10}
	var got []int
	for s := range ends {
		if s == 0 || ends[s] != ends[s-1] {
			got = append(got, s)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("batches written at ticks %v, want %v", got, want)
	}
	for _, s := range want {
		evs, err := readAll(t, buf.Bytes()[:ends[s]])
		if err != nil && !strings.Contains(err.Error(), "ends without an end frame") {
			t.Fatalf("cut after tick %d: %v", s, err)
		}
		if last := evs[len(evs)-1]; last.Kind != KindTick || !last.Time.Equal(start.Add(time.Duration(s)*time.Second)) {
			t.Fatalf("cut after tick %d: the last event is %+v", s, last)
		}
	}
}

// A scrape whose changed lines do not fit the target's last body (a bug
// upstream) is recorded as an error, and the scrapes after it as they
// were, their Content-Type too.
func TestScrapeThatDoesNotFitIsAnError(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{}, []sources.Target{{Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1795521360, 0)
	const om = "application/openmetrics-text"
	w.Scrape(&sources.Scrape{Target: "a", Time: at, ContentType: "text/plain", Body: []byte("x 1\ny 2")})
	w.Scrape(&sources.Scrape{Target: "a", Time: at.Add(time.Second), ContentType: om,
		Lines: &sources.BodyLines{N: 2, Index: []int32{1}, Keep: []int32{100}, Text: [][]byte{[]byte("3")}}})
	w.Scrape(&sources.Scrape{Target: "a", Time: at.Add(2 * time.Second), ContentType: om, Body: []byte("x 1\ny 4")})
	w.Tick(at.Add(2 * time.Second))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := readAll(t, buf.Bytes())
	if err != io.EOF {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		if ev.Kind == KindScrape {
			got = append(got, fmt.Sprintf("%s %q %s", ev.ContentType, ev.Body, ev.Err))
		}
	}
	want := []string{`text/plain "x 1\ny 2" `, ` "" body not recorded: its previous body is unknown to the recorder`, om + ` "x 1\ny 4" `}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read back\n%q\nwant\n%q", got, want)
	}
}

// TestCreateRefusesExisting: --record never truncates an existing file
// nor follows a symbolic link to one; the error says which.
func TestCreateRefusesExisting(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "incident.vtop")
	if err := os.WriteFile(precious, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.vtop")
	if err := os.Symlink(precious, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling.vtop")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{precious: "exists", link: "symbolic link", dangling: "symbolic link"} {
		w, err := Create(path, Header{}, nil, 0)
		if err == nil {
			w.Close()
			t.Errorf("%s: created", path)
		} else if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
	if b, _ := os.ReadFile(precious); string(b) != "kept" {
		t.Errorf("the existing file now holds %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); err == nil {
		t.Errorf("a file was created through the dangling link")
	}
}

// The pipeline applied each GPU reading on its own, so a replay hands each
// over too, with its events, even when two fall between evaluations (in
// one batch, evaluated at the tick as live was): the GPU history must keep
// both points.
func TestGPUReadingsBetweenTicksReplayEach(t *testing.T) {
	fx := newFixture(t)
	path := filepath.Join(t.TempDir(), "rec.vtop")
	w, err := Create(path, fx.hdr, fx.live, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	gpu := func(s int, xid int) *sources.GPUSnapshot {
		g := sources.GPU{Index: 0, UUID: "GPU-0", Name: "x"}
		g.SetUnknown()
		g.UtilGPU = float64(90 + s)
		at := t0.Add(time.Duration(s) * time.Second)
		return &sources.GPUSnapshot{Time: at, GPUs: []sources.GPU{g}, Events: []sources.GPUEvent{{Time: at, GPU: 0, XID: xid}}}
	}
	w.GPU(gpu(1, 31))
	w.GPU(gpu(2, 43))
	w.Tick(t0.Add(2 * time.Second))
	w.GPU(gpu(3, 48))
	w.Tick(t0.Add(3 * time.Second))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src := NewSource([]string{path}, 0)
	out := make(chan sources.Batch, 8)
	if err := src.Run(context.Background(), out); err != nil || src.Stopped() != nil {
		t.Fatal(err, src.Stopped())
	}
	close(out)
	var got []string
	for b := range out {
		if b.GPU == nil {
			continue
		}
		for _, g := range append(b.EarlierGPU, *b.GPU) {
			for _, e := range g.Events {
				got = append(got, fmt.Sprintf("%v@%s xid %d", g.GPUs[0].UtilGPU, g.Time.Sub(t0), e.XID))
			}
		}
	}
	if want := []string{"91@1s xid 31", "92@2s xid 43", "93@3s xid 48"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("replayed %q, want %q", got, want)
	}
}

// TestHeaderBoundsRefused: a header's window or interval past what vtop
// keeps history for (a crafted file; vtop never writes one) is refused,
// naming the file and the bound. Before, a window of 106,751 days was
// replayed as it was, overflowing the engine's retention arithmetic.
func TestHeaderBoundsRefused(t *testing.T) {
	for _, c := range []struct {
		window, interval time.Duration
		want             string
	}{
		{math.MaxInt64, time.Second, "test.vtop: header: window 2562047h47m16.854775807s is not between 0 and 24h0m0s, the history vtop keeps"},
		{-time.Minute, time.Second, "window -1m0s is not between"},
		{time.Minute, 2 * time.Hour, "test.vtop: header: interval 2h0m0s is not between 0 and 1h0m0s"},
	} {
		fx := newFixture(t)
		fx.hdr.Window, fx.hdr.Interval = Duration(c.window), Duration(c.interval)
		if _, err := readAll(t, fx.bytes(t)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("window %s, interval %s: %v, want %q", c.window, c.interval, err, c.want)
		}
	}
	fx := newFixture(t)
	fx.hdr.Window = Duration(24 * time.Hour)
	if _, err := readAll(t, fx.bytes(t)); err != io.EOF {
		t.Errorf("a 24 h window: %v", err)
	}
}
