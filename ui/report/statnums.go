package report

import (
	"math"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/internal/jsonsplice"
	f "github.com/vtop-dev/vtop/ui/format"
)

// StatValue is number id of s in its unit, as the screen and the text
// report write it: the value and the unit's suffix ("/s", " tok/s").
func StatValue(s *diagnose.Stats, id diagnose.StatID) (value, unit string) {
	v := s.Num(id)
	switch diagnose.StatFields[id].Unit {
	case diagnose.UnitRatio:
		return f.Percent(v), ""
	case diagnose.UnitPerSec:
		return f.Rate(v), "/s"
	case diagnose.UnitTokPerSec:
		return f.Rate(v), " tok/s"
	case diagnose.UnitReqPerSec:
		return f.Rate(v), " req/s"
	case diagnose.UnitBytesPerSec:
		if math.IsNaN(v) {
			return f.Missing, ""
		}
		return f.Bytes(v) + "/s", ""
	case diagnose.UnitNumber:
		return f.Dec(v, 2), ""
	case diagnose.UnitTokens:
		return f.Tokens(v), ""
	}
	return f.Count(v), ""
}

// StatText is number id of s after its word: "preempt 0.2/s".
func StatText(s *diagnose.Stats, id diagnose.StatID) string {
	v, u := StatValue(s, id)
	if l := diagnose.StatFields[id].Label; l != "" {
		return l + " " + v + u
	}
	return v + u
}

// StatNums are one object's numbers: the rows of diagnose.StatFields whose
// Group it is, in the table's order. They are written by the rows' keys
// among the object's other members, each before the member its row names.
type StatNums struct {
	group string
	nums  []Num
}

// statRows are the table's rows by group, in order.
var statRows = func() map[string][]diagnose.StatID {
	m := map[string][]diagnose.StatID{}
	for i := range diagnose.StatFields {
		if g := diagnose.StatFields[i].Group; g != "" {
			m[g] = append(m[g], diagnose.StatID(i))
		}
	}
	return m
}()

func statNums(s *diagnose.Stats, group string) StatNums {
	ids := statRows[group]
	out := StatNums{group, make([]Num, len(ids))}
	for i, id := range ids {
		out.nums[i] = Num(s.Num(id))
	}
	return out
}

// Get is number id of the object; null (NaN) when it holds no such number.
func (n StatNums) Get(id diagnose.StatID) Num {
	for i, x := range statRows[n.group] {
		if x == id && i < len(n.nums) {
			return n.nums[i]
		}
	}
	return Num(math.NaN())
}

// marshal writes members (the other members of group's object) with n
// spliced in; a zero StatNums writes every number null.
func (n StatNums) marshal(group string, members any) ([]byte, error) {
	b, err := jsonc.Marshal(members)
	if err != nil {
		return nil, err
	}
	if n.group != group {
		n.nums = nil
	}
	ids := statRows[group]
	for a := 0; a < len(ids); {
		before := diagnose.StatFields[ids[a]].Before
		z := a + 1
		for z < len(ids) && diagnose.StatFields[ids[z]].Before == before {
			z++
		}
		var at []string
		if before != "" {
			at = []string{before}
		}
		off := a
		b = jsonsplice.Insert(b, z-a, func(dst []byte, i int) []byte {
			v := Num(math.NaN())
			if off+i < len(n.nums) {
				v = n.nums[off+i]
			}
			enc, _ := v.MarshalJSON()
			return jsonsplice.Member(dst, diagnose.StatFields[ids[off+i]].JSON, enc)
		}, at...)
		a = z
	}
	return b, nil
}

// MarshalJSON writes the cache row's numbers and prefix_caching.
func (j JSONCache) MarshalJSON() ([]byte, error) {
	type members JSONCache
	return j.Nums.marshal("cache", members(j))
}

// MarshalJSON writes the queue row's numbers.
func (j JSONQueue) MarshalJSON() ([]byte, error) {
	type members JSONQueue
	return j.Nums.marshal("queue", members(j))
}

// MarshalJSON writes the throughput row's numbers and finish_reasons.
func (j JSONThroughput) MarshalJSON() ([]byte, error) {
	type members JSONThroughput
	return j.Nums.marshal("throughput", members(j))
}

// MarshalJSON writes speculative decoding's numbers and accepted_by_position.
func (j JSONSpec) MarshalJSON() ([]byte, error) {
	type members JSONSpec
	return j.Nums.marshal("speculative", members(j))
}

// MarshalJSON writes KV transfer's numbers.
func (j JSONKVTransfer) MarshalJSON() ([]byte, error) {
	type members JSONKVTransfer
	return j.Nums.marshal("kv_transfer", members(j))
}
