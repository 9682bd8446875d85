package promapi

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jsoniter "github.com/json-iterator/go"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
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
	p, err := readRange(strings.NewReader(body), r)
	if err != nil {
		t.Fatal(err)
	}
	// Read in pieces the answer comes out the same: the decoder's buffer
	// is refilled mid-point (a value's bytes live only until the next read).
	for size := 1; size < 40; size++ {
		q, err := readRange(&pieces{body, size}, r)
		if err != nil {
			t.Fatalf("in pieces of %d: %v", size, err)
		}
		if string(q.arena) != string(p.arena) || !slices.Equal(q.vals, p.vals) || !slices.Equal(q.series, p.series) {
			t.Fatalf("in pieces of %d bytes: %q, want %q", size, q.arena, p.arena)
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
