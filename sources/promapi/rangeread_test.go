package promapi

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jsoniter "github.com/json-iterator/go"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/vtop-dev/vtop/sources"
)

// A range answer read as text gives each step the line model.Matrix and
// appendSample gave it: the same series text, a value that reads as the
// same number, the same steps with and without a point.
func TestReadRangeAsMatrix(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	r := v1.Range{Start: start, End: start.Add(4 * 15 * time.Second), Step: 15 * time.Second}
	at := func(k int, frac string) string { return strconv.FormatInt(start.Unix()+int64(15*k), 10) + frac }
	body := `{"status":"success","data":{"resultType":"matrix","result":[` +
		`{"metric":{"__name__":"vllm:num_requests_running","instance":"a:1","job":"vllm","model_name":"m\"x\\y\nz\u00e9","engine":"0"},` +
		`"values":[[` + at(0, "") + `,"1"],[` + at(1, ".000") + `,"2.5"],[` + at(2, ".5") + `,"9"],[` + at(3, "") + `,"1e-07"],[` + at(4, "") + `,"NaN"]]},` +
		// values before the labels, a point off the grid and one past the end
		`{"values":[[` + at(1, ".001") + `,"7"],[` + at(2, "") + `,"-Inf"],[` + at(5, "") + `,"3"]],"histograms":[],` +
		`"metric":{"__name__":"vllm:time_to_first_token_seconds_bucket","le":"+Inf","pod":"p","namespace":"llm","instance":"b:1"}}` +
		`]},"warnings":["x"]}`
	checkAsMatrix(t, body, r, 40)
	// Many series, long values, gaps.
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for i := 0; i < 197; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"__name__":"vllm:x","instance":"r%d:1","le":"%d"},"values":[`, i%7, i)
		for k := 0; k < 5; k += 1 + i%2 {
			if k > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `[%s,"%d.%s"]`, at(k, ""), i*k, strings.Repeat("0", (i*37+k)%900))
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`]}}`)
	checkAsMatrix(t, b.String(), r, 3)
}

// checkAsMatrix reads body as a rangePart, whole and in pieces of up to
// maxPiece bytes, and compares it with model.Matrix and appendSeries.
func checkAsMatrix(t *testing.T, body string, r v1.Range, maxPiece int) {
	t.Helper()
	start := r.Start
	p, err := readRange(strings.NewReader(body), r)
	if err != nil {
		t.Fatal(err)
	}
	// Read in pieces the answer comes out the same: the decoder's buffer
	// is refilled mid-point (a value's bytes live only until the next read).
	for size := 1; size < maxPiece; size++ {
		q, err := readRange(&pieces{body, size}, r)
		if err != nil {
			t.Fatalf("in pieces of %d: %v", size, err)
		}
		for i := range p.series {
			for k := 0; k < p.steps; k++ {
				if string(q.value(i, k)) != string(p.value(i, k)) || (q.value(i, k) == nil) != (p.value(i, k) == nil) {
					t.Fatalf("in pieces of %d bytes: series %d step %d: %q, want %q", size, i, k, q.value(i, k), p.value(i, k))
				}
			}
		}
		if string(q.lines) != string(p.lines) || !slices.Equal(q.series, p.series) {
			t.Fatalf("in pieces of %d bytes: %q, want %q", size, q.lines, p.lines)
		}
	}
	var want struct {
		Data struct {
			Result model.Matrix `json:"result"`
		} `json:"data"`
	}
	if err := jsoniter.ConfigCompatibleWithStandardLibrary.UnmarshalFromString(body, &want); err != nil {
		t.Fatal(err)
	}
	if len(p.series) != len(want.Data.Result) {
		t.Fatalf("%d series, want %d", len(p.series), len(want.Data.Result))
	}
	var scratch []labelPair
	for i, ss := range want.Data.Result {
		if p.series[i].key != keyOf(ss.Metric) {
			t.Errorf("series %d: key %q, want %q", i, p.series[i].key, keyOf(ss.Metric))
		}
		if got, want := metricOfKey(p.series[i].key), keyOf(ss.Metric); keyOf(got) != want {
			t.Errorf("series %d: metric of the key %v", i, got)
		}
		line := string(appendSeries(nil, ss.Metric, &scratch))
		if string(p.lineOf(i)) != line {
			t.Errorf("series %d: line %q, want %q", i, p.lineOf(i), line)
		}
		pts := ss.Values
		for k := 0; k < p.steps; k++ {
			tm := model.TimeFromUnixNano(start.Add(time.Duration(k) * r.Step).UnixNano())
			for len(pts) > 0 && pts[0].Timestamp < tm {
				pts = pts[1:]
			}
			v := p.value(i, k)
			if len(pts) == 0 || pts[0].Timestamp != tm {
				if v != nil {
					t.Errorf("series %d step %d: %q, want no point", i, k, v)
				}
				continue
			}
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil || model.SampleValue(f).Equal(pts[0].Value) == false {
				t.Errorf("series %d step %d: %q (%v), want %v", i, k, v, err, pts[0].Value)
			}
		}
	}
}

// What the server says is wrong, and answers that are not a range of
// numbers, are errors; nothing of a value reaches the text that is not a
// number.
func TestReadRangeErrors(t *testing.T) {
	r := v1.Range{Start: time.Unix(0, 0), End: time.Unix(60, 0), Step: 15 * time.Second}
	for _, c := range []struct{ body, want string }{
		{`{"status":"error","errorType":"bad_data","error":"parse error at char 3"}`, "bad_data: parse error at char 3"},
		{`{"status":"success","data":{"resultType":"vector","result":[]}}`, "got a vector, not a range"},
		{`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[0,"1\n x 2"]]}]}}`, "is not a number"},
		{`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[0,"1 # {a=\"b\"} 1"]]}]}}`, "is not a number"},
		{`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[0]]}]}}`, "not [time, value]"},
		{`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[0,"1",2]]}]}}`, "not [time, value]"},
		{`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[0,"1"]`, "expect ]"},
		{`<html>bad gateway</html>`, "ReadObjectCB"},
		{``, "expect {"},
		{`{}`, "no status"},
	} {
		_, err := readRange(strings.NewReader(c.body), r)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.body, err, c.want)
		}
	}
}

// pieces reads s n bytes at a time.
type pieces struct {
	s string
	n int
}

func (p *pieces) Read(b []byte) (int, error) {
	if p.s == "" {
		return 0, io.EOF
	}
	k := copy(b[:min(len(b), p.n)], p.s)
	p.s = p.s[k:]
	return k, nil
}

// A replica's exposition written into value slots (padded with spaces)
// reads step by step as the same lines written out plainly do; a step
// where a series has no point is not filled.
func TestSlottedReadsAsPlain(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	r := v1.Range{Start: start, End: start.Add(5 * 15 * time.Second), Step: 15 * time.Second}
	at := func(k int) string { return strconv.FormatInt(start.Unix()+int64(15*k), 10) }
	body := `{"status":"success","data":{"resultType":"matrix","result":[` +
		`{"metric":{"__name__":"vllm:num_requests_running","instance":"a:1","model_name":"m"},"values":[` +
		`[` + at(0) + `,"1"],[` + at(1) + `,"12345.5"],[` + at(2) + `,"3"],[` + at(3) + `,"4"],[` + at(4) + `,"5e-07"],[` + at(5) + `,"6"]]},` +
		`{"metric":{"__name__":"vllm:num_requests_waiting","instance":"a:1","model_name":"m"},"values":[` +
		`[` + at(0) + `,"10"],[` + at(1) + `,"0"],[` + at(2) + `,"NaN"],[` + at(4) + `,"+Inf"],[` + at(5) + `,"7"]]}]}}`
	p, err := readRange(strings.NewReader(body), r)
	if err != nil {
		t.Fatal(err)
	}
	s := &Source{fleet: newFleet(map[string]string{"vllm:num_requests_running": "Number of requests in model execution batches."})}
	b := s.slotted([]seriesRef{{p, 0}, {p, 1}})
	slotted, plain := sources.NewNormalizer(), sources.NewNormalizer()
	filled := 0
	for k := 0; k < p.steps; k++ {
		text := b.fill(k)
		if (text == nil) != (k == 3) {
			t.Fatalf("step %d: filled %v", k, text != nil)
		}
		if text == nil {
			continue
		}
		filled++
		want := s.fleet.header(nil)
		for i := range p.series {
			want = append(append(append(want, p.lineOf(i)...), p.value(i, k)...), '\n')
		}
		s1, e1 := slotted.Normalize(text, rebuiltType)
		s2, e2 := plain.Normalize(want, rebuiltType)
		if e1 != nil || e2 != nil || fmt.Sprint(s1) != fmt.Sprint(s2) {
			t.Fatalf("step %d: %v %v\n%s\n%v\nplain:\n%s\n%v", k, e1, e2, text, s1, want, s2)
		}
	}
	if filled != p.steps-1 {
		t.Fatalf("%d steps filled", filled)
	}
}

// A step where a replica was scraped but none of its series has a point
// hands on nothing for it (not an empty exposition, which reads as a failed
// scrape); the steps around it hand on its samples.
func TestChunkStepWithoutPoints(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	r := v1.Range{Start: start, End: start.Add(2 * 15 * time.Second), Step: 15 * time.Second}
	at := func(k int) string { return strconv.FormatInt(start.Unix()+int64(15*k), 10) }
	body := `{"status":"success","data":{"resultType":"matrix","result":[` +
		`{"metric":{"__name__":"vllm:num_requests_running","instance":"a:1","model_name":"m"},"values":[[` + at(0) + `,"1"],[` + at(2) + `,"3"]]},` +
		`{"metric":{"__name__":"vllm:num_requests_waiting","instance":"a:1","model_name":"m"},"values":[[` + at(0) + `,"0"],[` + at(2) + `,"2"]]}]}}`
	p, err := readRange(strings.NewReader(body), r)
	if err != nil {
		t.Fatal(err)
	}
	var stamps model.SampleStream
	stamps.Metric = model.Metric{"instance": "a:1"}
	for k := 0; k < 3; k++ {
		ts := model.TimeFromUnixNano(start.Add(time.Duration(k) * r.Step).UnixNano())
		stamps.Values = append(stamps.Values, model.SamplePair{Timestamp: ts, Value: model.SampleValue(float64(ts) / 1000)})
	}
	s := &Source{c: &Client{}, fleet: newFleet(nil)}
	out := make(chan sources.Batch, 3)
	if !s.sendChunk(context.Background(), out, fetched{r: r, stamps: model.Matrix{&stamps}, parts: []*rangePart{p}}) {
		t.Fatal("sendChunk stopped")
	}
	close(out)
	var got []string
	for b := range out {
		line := ""
		for _, sc := range b.Scrapes {
			if sc.Err != nil {
				line += "error " + sc.Err.Error()
			} else {
				line += fmt.Sprint(sc.Data.Subs[0].Gauges[sources.GRunning], " ", sc.Data.Subs[0].Gauges[sources.GWaiting])
			}
		}
		got = append(got, line)
	}
	if want := []string{"1 0", "", "3 2"}; !slices.Equal(got, want) {
		t.Fatalf("steps handed on %q, want %q", got, want)
	}
}
