package promapi

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// A federation answer is split by target: escaped quotes and commas in
// label values do not move a line to another target, a line without a
// timestamp is as of the answer, lines lose the target's labels and the
// timestamp (as the query API path rebuilds them),
// and the process families only join targets already seen.
func TestFederationSplit(t *testing.T) {
	f := newFederation([]string{"vllm:num_requests_running"}, func(b []byte) []byte { return append(b, "# HELP x\n"...) })
	f.now = 5000
	vllm := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{instance="a:1",job="vllm",model_name="m"} 3 1000
vllm:num_requests_running{instance="b \"x\", y:2",job="vllm",model_name="m"} 4
vllm:cache_config_info{block_size="16",instance="a:1",job="vllm"} 1 1000
vllm:num_requests_waiting{instance="a:1",job="vllm",model_name="m"} 1 2000
`
	if err := f.read(strings.NewReader(vllm), 1, false); err != nil {
		t.Fatal(err)
	}
	proc := `process_resident_memory_bytes{instance="a:1",job="vllm"} 7 1000
process_resident_memory_bytes{instance="node:9100",job="vllm"} 9 1000
`
	if err := f.read(strings.NewReader(proc), 1, true); err != nil {
		t.Fatal(err)
	}
	if len(f.byKey) != 2 {
		t.Fatalf("%d targets, want 2: %v", len(f.byKey), f.byKey)
	}
	for _, tg := range f.byKey {
		switch tg.m["instance"] {
		case "a:1":
			want := "# HELP x\n" +
				`vllm:num_requests_running{model_name="m"} 3` + "\n" +
				`vllm:cache_config_info{block_size="16"} 1` + "\n" +
				`vllm:num_requests_waiting{model_name="m"} 1` + "\n" +
				`process_resident_memory_bytes{} 7` + "\n"
			if got := string(f.text(nil, tg)); got != want || tg.stamp != 1000 {
				t.Errorf("a: stamp %d\n%s", tg.stamp, got)
			}
		case `b "x", y:2`:
			if got := string(f.text(nil, tg)); tg.stamp != 5000 || strings.Count(got, "\n") != 2 {
				t.Errorf("b: stamp %d\n%s", tg.stamp, got)
			}
		default:
			t.Errorf("unexpected target %v", tg.m)
		}
	}
	if err := f.read(strings.NewReader(`vllm:x{instance="a:1,job="v"} 1`+"\n"), 2, false); err == nil {
		t.Error("an unterminated label value was read")
	}
}

// valueFields reads a sample's tail as bytes.Fields does.
func TestValueFields(t *testing.T) {
	for _, in := range []string{"", " ", "3\n", " 3 1000\n", "3\t1000", "1e+06  42 # {a=\"b\"} 1\r\n", "+Inf"} {
		want := bytes.Fields([]byte(in))
		val, ts, n := valueFields([]byte(in))
		if n != len(want) || (n > 0 && string(val) != string(want[0])) || (n > 1 && string(ts) != string(want[1])) {
			t.Errorf("%q: %q %q %d, want %q", in, val, ts, n, want)
		}
	}
}

// A replica's lines in the /federate answers are normalized from the
// split samples (splitScratch) to the snapshot its rebuilt text gives;
// a replica with a series not in the plain form is left to the text.
func TestSplitReadsAsText(t *testing.T) {
	capture, err := os.ReadFile("../../testdata/dumps/armandossrecife-vllm-server-api-chat__v0.10.1-ngc25.09_full.txt")
	if err != nil {
		t.Fatal(err)
	}
	var ans strings.Builder
	for i := range 3 {
		id := fmt.Sprintf(`instance="h:%d",job="vllm"`, i)
		for _, l := range strings.Split(string(capture), "\n") {
			l = strings.TrimSpace(l)
			if l == "" || l[0] == '#' {
				continue
			}
			if strings.Contains(l, "{") {
				l = strings.Replace(l, "{", "{"+id+",", 1)
			} else {
				l = strings.Replace(l, " ", "{"+id+"} ", 1)
			}
			if i == 2 && strings.HasPrefix(l, "vllm:num_requests_waiting{") {
				l = strings.Replace(l, "{", "{bad=\"\xff\",", 1) // not valid UTF-8: the parser decides
			}
			ans.WriteString(l + " 1700000000000\n")
		}
	}
	// Families of both generations: the running gauge's HELP, the one
	// header line, decides which it is.
	ans.WriteString(`vllm:num_requests_running{engine="0",instance="h:3",job="vllm",model_name="m"} 2` + "\n" +
		`vllm:num_requests_swapped{instance="h:3",job="vllm",model_name="m"} 0` + "\n")
	fl := newFleet(map[string]string{"vllm:num_requests_running": "Number of requests currently running on GPU."})
	f := newFederation([]string{"vllm:num_requests_running"}, fl.header)
	f.now = 1700000001000
	if err := f.read(strings.NewReader(ans.String()), 1, false); err != nil {
		t.Fatal(err)
	}
	if len(f.byKey) != 4 {
		t.Fatalf("%d targets", len(f.byKey))
	}
	at := time.UnixMilli(1700000000000)
	var sp splitScratch
	for _, tg := range f.byKey {
		split := &replica{name: string(tg.m["instance"]), norm: sources.NewNormalizer()}
		j := normJob{r: split, at: at, parts: []fedPart{{f, tg}}}
		took := sp.normalize(&j)
		if want := tg.m["instance"] != "h:2"; took != want {
			t.Errorf("%s: read from the split samples: %v, want %v", tg.m["instance"], took, want)
		}
		if !took {
			continue
		}
		text := &replica{name: split.name, norm: sources.NewNormalizer()}
		want := text.normalize(f.text(nil, tg), at, false)
		if j.out.Err != nil || want.Err != nil || want.Data == nil {
			t.Fatalf("%s: errors %v, %v", split.name, j.out.Err, want.Err)
		}
		// %+v: NaN equals NaN, as reflect.DeepEqual would not have it.
		got, gotData, wantData := j.out, fmt.Sprintf("%+v", j.out.Data), fmt.Sprintf("%+v", want.Data)
		got.Data, want.Data = nil, nil
		if gotData != wantData || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("%s: the split samples read\n%+v %s\nthe text\n%+v %s", split.name, got, gotData, want, wantData)
		}
	}
}

// isID names idLabels' index for each of them and for nothing else.
func TestIsID(t *testing.T) {
	for i, l := range idLabels {
		if got := isID([]byte(l)); got != i {
			t.Errorf("isID(%s) = %d, want %d", l, got, i)
		}
	}
	for _, l := range []string{"", "model_name", "le", "instances", "Job"} {
		if got := isID([]byte(l)); got != -1 {
			t.Errorf("isID(%q) = %d", l, got)
		}
	}
}

// Lines are read by their series' shape (fedShape) once a series has one:
// in the second refresh of an answer as servers write it, every line but
// none of the first target's, both with vLLM's labels after the server's
// and with the server's on both sides of them; the records are the
// walked ones (FuzzSplitReuse compares them on any answer).
func TestSplitReadsByShape(t *testing.T) {
	for name, in := range map[string]string{"plain": fleetAnswer(20, 10), "kubernetes": k8sAnswer(20, 10, false)} {
		lines := strings.Count(in, "\n") - strings.Count(in, "# ")
		fed := newFederation([]string{"vllm:num_requests_running"}, nil)
		fed.now = 5000
		for gen := uint64(1); gen <= 2; gen++ {
			fed.byShape = 0
			if err := fed.read(strings.NewReader(in), gen, false); err != nil {
				t.Fatal(err)
			}
		}
		// The first line of each series is walked: it makes the shape.
		if want := lines - len(fed.series); fed.byShape != want {
			t.Errorf("%s: %d of %d lines read by shape, want %d", name, fed.byShape, lines, want)
		}
	}
}

// A target forgotten (gone from an answer) and back later is filed under
// its new entry, not the old one another target's order still leads to:
// here r0's line was the answer's last when r1 left, so r0 still names r1
// as the target after it.
func TestSplitForgottenTargetReturns(t *testing.T) {
	line := func(r int) string {
		return fmt.Sprintf(`vllm:num_requests_running{instance="r%d:8000",job="vllm",model_name="m"} %d 1000`+"\n", r, r)
	}
	fed := newFederation([]string{"vllm:num_requests_running"}, nil)
	fed.now = 5000
	read := func(gen uint64, rs ...int) {
		var b strings.Builder
		for _, r := range rs {
			b.WriteString(line(r))
		}
		if err := fed.read(strings.NewReader(b.String()), gen, false); err != nil {
			t.Fatal(err)
		}
		for k, tg := range fed.byKey {
			if tg.gen != gen {
				fed.forget(k, tg)
			}
		}
	}
	read(1, 2, 0, 1)
	read(2, 2, 0) // r1 forgotten; r0 last
	read(3, 2, 0, 1)
	if len(fed.byKey) != 3 {
		t.Fatalf("%d targets, want 3", len(fed.byKey))
	}
	for _, tg := range fed.byKey {
		if tg.gen != 3 || len(tg.recs) == 0 {
			t.Errorf("%v: gen %d, %d bytes of records; want gen 3 and its line", tg.m, tg.gen, len(tg.recs))
		}
	}
}
