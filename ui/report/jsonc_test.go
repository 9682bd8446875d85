package report

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestJSONCMatchesEncodingJSON: the lists' encoder (json-iterator's
// standard-library configuration) writes what encoding/json writes, byte
// for byte, for random values of every type in the report's lists, and
// WriteJSON the whole document as json.Encoder does: strings with HTML,
// quotes, control characters, U+2028 and invalid UTF-8; numbers null, ±0,
// whole, tiny, huge; nil and empty lists and pointers.
func TestJSONCMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 6))
	groups := slices.Sorted(func(yield func(string) bool) {
		for g := range statRows {
			if !yield(g) {
				return
			}
		}
	})
	for i := range 300 {
		var rep JSONReport
		fillRandom(reflect.ValueOf(&rep).Elem(), r, groups, 0)
		// Each list's elements, as WriteJSON encodes them.
		v := reflect.ValueOf(rep)
		for f := range v.NumField() {
			if v.Field(f).Kind() != reflect.Slice {
				continue
			}
			for j := range v.Field(f).Len() {
				e := v.Field(f).Index(j).Interface()
				want, werr := json.Marshal(e)
				got, gerr := jsonc.Marshal(e)
				if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
					t.Fatalf("report %d, %s[%d]: json-iterator wrote (%v)\n%s\nencoding/json (%v)\n%s", i, v.Type().Field(f).Name, j, gerr, got, werr, want)
				}
			}
		}
		// And the whole document as json.Encoder writes it.
		var want, got bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		werr := enc.Encode(rep)
		gerr := WriteJSON(&got, rep)
		if (werr != nil) != (gerr != nil) || werr == nil && !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("report %d: WriteJSON wrote (%v)\n%s\nthe encoder (%v)\n%s", i, gerr, got.Bytes(), werr, want.Bytes())
		}
	}
}

var randomStrings = []string{"", "a", "vllm:8000", "<b>&c", `quote " and \ back`, "\u2028 and \u2029", "\x00\x01\x1f\x7f",
	"\xff\xfe invalid", "trunc\xc3", "héllo ✓ 😀", "\t\n\r", "</script>", "a\u00a0b", "\ufffd", "\xed\xa0\x80 surrogate"}

var randomFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 123.456, 1e20, 1e21, 1e-6, 1e-7, 123456789012345678,
	5e-324, math.MaxFloat64, 1.0 / 3, 2.5e-5, 4096}

// fillRandom sets v (and everything under it) to random values: at most a
// few levels of pointers and lists, so a report stays small.
func fillRandom(v reflect.Value, r *rand.Rand, groups []string, depth int) {
	switch v.Type() {
	case reflect.TypeFor[time.Time]():
		t := time.Unix(r.Int64N(4e9), r.Int64N(1e9))
		if r.IntN(2) == 0 {
			t = t.UTC()
		} else {
			t = t.In(time.FixedZone("X", 3600*r.IntN(12)))
		}
		v.Set(reflect.ValueOf(t))
		return
	case reflect.TypeFor[StatNums]():
		nums := make([]Num, r.IntN(12))
		for i := range nums {
			nums[i] = randomNum(r)
		}
		v.Set(reflect.ValueOf(StatNums{group: groups[r.IntN(len(groups))], nums: nums}))
		return
	case reflect.TypeFor[Num]():
		v.Set(reflect.ValueOf(randomNum(r)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(randomStrings[r.IntN(len(randomStrings))])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Int16, reflect.Int8:
		v.SetInt((r.Int64N(2e9) - 1e9) >> (8 * (8 - v.Type().Size())))
	case reflect.Uint, reflect.Uint64, reflect.Uint32, reflect.Uint16, reflect.Uint8:
		v.SetUint(r.Uint64() >> r.IntN(64))
	case reflect.Float64: // a plain float64 is never NaN or ±Inf in the report
		v.SetFloat(randomFloats[r.IntN(len(randomFloats))] * float64(1-2*r.IntN(2)))
	case reflect.Pointer:
		if depth > 4 || r.IntN(3) == 0 {
			return
		}
		p := reflect.New(v.Type().Elem())
		fillRandom(p.Elem(), r, groups, depth+1)
		v.Set(p)
	case reflect.Slice:
		switch n := r.IntN(4); {
		case depth > 4 || n == 0:
		case n == 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			s := reflect.MakeSlice(v.Type(), n-1, n-1)
			for i := range n - 1 {
				fillRandom(s.Index(i), r, groups, depth+1)
			}
			v.Set(s)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range r.IntN(3) {
			k := reflect.New(v.Type().Key()).Elem()
			e := reflect.New(v.Type().Elem()).Elem()
			fillRandom(k, r, groups, depth+1)
			fillRandom(e, r, groups, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillRandom(v.Field(i), r, groups, depth+1)
			}
		}
	default:
		panic("fillRandom: no random " + v.Type().String())
	}
}

func randomNum(r *rand.Rand) Num {
	switch r.IntN(8) {
	case 0:
		return Num(math.NaN())
	case 1:
		return Num(math.Inf(1 - 2*r.IntN(2)))
	}
	return Num(randomFloats[r.IntN(len(randomFloats))] * float64(1-2*r.IntN(2)))
}
