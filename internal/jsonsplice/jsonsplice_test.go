package jsonsplice

import (
	"encoding/json"
	"strconv"
	"testing"
)

func TestInsert(t *testing.T) {
	nums := func(keys ...string) func([]byte, int) []byte {
		return func(dst []byte, i int) []byte { return Member(dst, keys[i], strconv.AppendInt(nil, int64(i+1), 10)) }
	}
	for _, c := range []struct {
		name, obj string
		keys      []string
		before    []string
		want      string
	}{
		{"before a member", `{"a":"x","c":[1]}`, []string{"b1", "b2"}, []string{"c"}, `{"a":"x","b1":1,"b2":2,"c":[1]}`},
		{"before the first", `{"c":1}`, []string{"b"}, []string{"c"}, `{"b":1,"c":1}`},
		{"the first named that is there", `{"a":1,"d":2}`, []string{"b"}, []string{"c", "d"}, `{"a":1,"b":1,"d":2}`},
		{"none there: at the end", `{"a":1}`, []string{"b", "c"}, []string{"z"}, `{"a":1,"b":1,"c":2}`},
		{"an empty object", `{}`, []string{"b", "c"}, nil, `{"b":1,"c":2}`},
		{"nothing to insert", `{"a":1}`, nil, []string{"a"}, `{"a":1}`},
		// A string holding the anchor's text is not the member.
		{"not inside a string", `{"s":"{\"c\":1,\"c\":2}","c":3}`, []string{"b"}, []string{"c"}, `{"s":"{\"c\":1,\"c\":2}","b":1,"c":3}`},
	} {
		got := string(Insert([]byte(c.obj), len(c.keys), nums(c.keys...), c.before...))
		if got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%s: %s is not JSON", c.name, got)
		}
	}
}
