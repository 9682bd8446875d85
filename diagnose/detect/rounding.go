package detect

import (
	"math"

	"github.com/vtop-dev/vtop/diagnose"
)

// Recommended values are rounded as operators write them into a deployment:
// nobody sets --max-num-seqs 27 or --max-num-batched-tokens 1,990. Each
// rounds down, towards the safer side: a lower batch cap or budget keeps
// more headroom, and a raise never passes what the evidence allows. Small
// values round to finer steps, so rounding never moves a value by much
// more than the 15% a shown recommendation waits for (flagMargin).

// roundSeqs rounds a --max-num-seqs down: exact below 16, a multiple of 4
// below 128, of 8 from 128 (a step of at most a sixteenth from 64 up, so
// a starving engine at 64 with room for 71 is still told 68). words says
// so, with the result.
func roundSeqs(n int) (r int, words diagnose.Text) {
	const rule = " (exact below 16, multiples of 4 below 128, of 8 from 128), as operators set it: "
	switch {
	case n < 16:
		return n, say("kept exact below 16 (multiples of 4 below 128, of 8 from 128): %s", grouped(float64(n)))
	case n < 128:
		r = n / 4 * 4
		return r, say("rounded down to a multiple of 4"+rule+"%s", grouped(float64(r)))
	default:
		r = n / 8 * 8
		return r, say("rounded down to a multiple of 8"+rule+"%s", grouped(float64(r)))
	}
}

// roundTokens rounds a token budget (--max-num-batched-tokens) down: a
// multiple of 64 below 1,024, of 256 from 1,024.
func roundTokens(v float64) (r int, words diagnose.Text) {
	const rule = " (multiples of 64 below 1,024, of 256 from 1,024), as operators set it: "
	if v < 1024 {
		r = int(math.Floor(v/64+1e-9)) * 64
		return r, say("rounded down to a multiple of 64"+rule+"%s", grouped(float64(r)))
	}
	r = int(math.Floor(v/256+1e-9)) * 256
	return r, say("rounded down to a multiple of 256"+rule+"%s", grouped(float64(r)))
}
