package record

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// Every row of sources.GPUFields goes through a recording by its key, and
// a recording without a row's key (made before the row was added) reads
// that number as unknown, not zero.
func TestGPUFieldsRecorded(t *testing.T) {
	for i, fd := range sources.GPUFields {
		g := sources.GPU{Index: 3, Name: "x"}
		g.SetUnknown()
		*fd.At(&g) = float64(1000 + i)
		s := sources.GPUSnapshot{Time: time.Unix(1795521360, 0).UTC(), GPUs: []sources.GPU{g}}
		b, err := json.MarshalIndent(toWire(&s), "", " ")
		if err != nil {
			t.Fatal(err)
		}
		key := `"` + fd.Wire + `": ` + strconv.Itoa(1000+i)
		if !bytes.Contains(b, []byte(key)) {
			t.Fatalf("%s: record lacks %s:\n%s", fd.Wire, key, b)
		}
		var w wireSnapshot
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		back := fromWire(&w)
		for k := range sources.GPUFields {
			got, want := *sources.GPUFields[k].At(&back.GPUs[0]), *sources.GPUFields[k].At(&g)
			if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Errorf("%s set: %s read back %v, want %v", fd.Wire, sources.GPUFields[k].Wire, got, want)
			}
		}
		old := bytes.Replace(b, []byte(key+",\n"), nil, 1)
		w = wireSnapshot{}
		if err := json.Unmarshal(old, &w); err != nil {
			t.Fatalf("without %s: %v\n%s", key, err, old)
		}
		if v := *fd.At(&fromWire(&w).GPUs[0]); !math.IsNaN(v) {
			t.Errorf("a record without %s reads %v, want unknown", fd.Wire, v)
		}
	}
}

// A stale GPU (its source failing) is recorded so; a recording without
// the flag (made before it, or of a fresh GPU) reads not stale.
func TestGPUStaleRecorded(t *testing.T) {
	g := sources.GPU{Index: 1, Name: "x", Stale: true}
	g.SetUnknown()
	s := sources.GPUSnapshot{Time: time.Unix(1795521360, 0).UTC(), GPUs: []sources.GPU{g}}
	b, err := json.Marshal(toWire(&s))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"stale":true`)) {
		t.Fatalf("no stale flag in %s", b)
	}
	var w wireSnapshot
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	if !fromWire(&w).GPUs[0].Stale {
		t.Error("stale read back fresh")
	}
	old := bytes.Replace(b, []byte(`,"stale":true`), nil, 1)
	w = wireSnapshot{}
	if err := json.Unmarshal(old, &w); err != nil || bytes.Equal(old, b) {
		t.Fatalf("without the flag: %v %s", err, old)
	}
	if fromWire(&w).GPUs[0].Stale {
		t.Errorf("a recording without the flag reads stale: %s", old)
	}
}
