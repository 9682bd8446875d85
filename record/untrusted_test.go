package record

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// walk calls f with every string v holds, bytes aside.
func walk(v reflect.Value, f func(string)) {
	switch v.Kind() {
	case reflect.String:
		f(v.String())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walk(v.Elem(), f)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				walk(v.Field(i), f)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := 0; i < v.Len(); i++ {
			walk(v.Index(i), f)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			walk(it.Key(), f)
			walk(it.Value(), f)
		}
	}
}

// TestReaderSanitizesEverything: a crafted recording (written here with
// escape sequences in every string it can carry: the Prometheus server's
// URL and selector, target names and URLs, a scrape's error, GPU names,
// notes and events, process names and notes) reads back with every string
// of its header and of every event safe to print.
func TestReaderSanitizesEverything(t *testing.T) {
	bad := "x\x1b]0;pwned\x07\x1b[2J\u202e\u009b"
	path := filepath.Join(t.TempDir(), "hostile.vtop")
	tg := sources.Target{Name: "t" + bad, URL: "http://127.0.0.1:9/metrics?" + bad}
	hdr := Header{VtopVersion: bad, Interval: Duration(time.Second), Prometheus: &Prometheus{URL: "http://p" + bad, Selector: bad}}
	w, err := Create(path, hdr, []sources.Target{tg}, 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	w.Target(sources.Target{Name: "u" + bad, URL: "http://127.0.0.2:9/" + bad})
	w.Scrape(&sources.Scrape{Target: tg.Name, Time: now, Err: errors.New(bad)})
	w.GPU(&sources.GPUSnapshot{Time: now, Source: bad, Unavailable: bad, Notes: []string{bad},
		GPUs:   []sources.GPU{{Name: bad, UUID: bad, PCIBusID: bad, ClockEvents: []string{bad}}},
		Events: []sources.GPUEvent{{Time: now, Text: bad, Level: bad}}})
	w.Procs(tg.Name, sources.ProcTree{Root: 1, RootName: bad, Note: bad, GPUs: []string{bad}, MemLimitFrom: bad})
	w.Tick(now)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	check := func(what string, v any) {
		walk(reflect.ValueOf(v), func(s string) {
			n++
			if sources.Sanitize(s, 0) != s {
				t.Errorf("%s: unsanitized %q", what, s)
			}
		})
	}
	check("header", r.Header())
	for {
		ev, err := r.Next()
		if err != nil || ev == nil {
			break
		}
		check("event", *ev)
	}
	if n < 20 {
		t.Errorf("only %d strings walked", n)
	}
}
