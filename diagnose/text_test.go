package diagnose

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// catByParts is Cat as it was written before catTexts: each part appended
// to a clipped copy in turn. Cat and Join must give what it gives, nil
// values included (a report writes nil and empty apart).
func catByParts(t Text, u ...Text) Text {
	out := Text{Form: t.Form, Args: t.Args[:len(t.Args):len(t.Args)]}
	if t.Args == nil {
		out.Args = nil
	}
	for _, x := range u {
		out.Form += x.Form
		out.Args = append(out.Args, x.Args...)
	}
	return out
}

func joinByParts(parts []Text, sep string) Text {
	var out Text
	for i, p := range parts {
		if i > 0 {
			out = catByParts(out, Plain(sep))
		}
		out = catByParts(out, p)
	}
	return out
}

func randomText(r *rand.Rand) Text {
	forms := []string{"", "plain", "%s", "KV %s at %s", "lower %s → %d", "100%%"}
	t := Text{Form: forms[r.IntN(len(forms))]}
	switch r.IntN(3) {
	case 1:
		t.Args = []Value{}
	case 2:
		for range 1 + r.IntN(3) {
			t.Args = append(t.Args, Value{Kind: KindSI, Num: r.Float64()})
		}
	}
	return t
}

func TestCatAndJoinAsPartByPart(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 1))
	for i := range 5000 {
		parts := make([]Text, r.IntN(5))
		for j := range parts {
			parts[j] = randomText(r)
		}
		sep := []string{", ", "; ", "", "50%"}[r.IntN(4)]
		if got, want := Join(parts, sep), joinByParts(parts, sep); !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: Join(%#v, %q) = %#v, part by part %#v", i, parts, sep, got, want)
		}
		head := randomText(r)
		if got, want := head.Cat(parts...), catByParts(head, parts...); !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: %#v.Cat(%#v) = %#v, part by part %#v", i, head, parts, got, want)
		}
	}
}
