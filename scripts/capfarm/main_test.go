package main

import (
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
)

const capture = "../../testdata/dumps/armandossrecife-vllm-server-api-chat__v0.10.1-ngc25.09_full.txt"

// Two requests give two bodies in which every counter and bucket line
// grew, gauges and comments stayed, and each histogram's buckets stay
// cumulative (never falling with le) with +Inf equal to _count.
func TestEveryCounterAdvances(t *testing.T) {
	raw, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := parseTemplate(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := tpl.advancing(); got < 250 {
		t.Fatalf("%d advancing lines; the v0.10.1 capture has ~290 counter, bucket, _count and _sum lines", got)
	}
	e := newEndpoint(tpl, 1)
	get := func() []string {
		w := httptest.NewRecorder()
		e.serve(w, httptest.NewRequest("GET", "/metrics", nil))
		return strings.Split(strings.TrimSuffix(w.Body.String(), "\n"), "\n")
	}
	a, b := get(), get()
	want := len(strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n"))
	if len(a) != len(tpl.lines) || len(b) != len(a) || want != len(a) {
		t.Fatalf("%d and %d lines, the capture %d", len(a), len(b), want)
	}
	val := func(s string) float64 {
		v, err := strconv.ParseFloat(s[strings.LastIndexByte(s, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return v
	}
	prevBucket := map[int]float64{}
	for i, l := range tpl.lines {
		if !l.sample {
			if a[i] != l.head || b[i] != l.head {
				t.Errorf("comment line %d changed: %q", i, b[i])
			}
			continue
		}
		va, vb := val(a[i]), val(b[i])
		if moves := l.step != stepNone; moves != (vb > va) || (!moves && vb != va) {
			t.Errorf("line %q -> %q: advancing is %v", a[i], b[i], moves)
		}
		if l.step == stepBucket {
			if l.hist > 0 && vb < prevBucket[l.series] {
				t.Errorf("bucket %q below the one before (%v)", b[i], prevBucket[l.series])
			}
			prevBucket[l.series] = vb
		}
		if l.step == stepCount && strings.HasPrefix(a[i], "vllm:") && prevBucket[l.series] != vb {
			t.Errorf("%q: +Inf bucket %v", b[i], prevBucket[l.series])
		}
	}
}
