package sim

import "time"

// request is one client request inside an engine. Token counts are per
// sequence; a request with n parallel samples advances its n sequences in
// lockstep.
type request struct {
	arrival   time.Duration
	prompt    int // prompt tokens
	target    int // output tokens it will write (≤ maxTokens)
	maxTokens int
	n         int
	deadline  time.Duration // when the client gives up (never: it waits)
	timeout   time.Duration // the client's timeout (a deadline before it is a user cancelling)

	lora        int // LoRA adapter (1-based; 0: the base model)
	group       int // shared prefix group, -1 none
	groupTokens int // tokens of that prefix (whole blocks)
	prefixRef   bool

	// P/D decode side: the prompt was prefilled on a prefill instance and
	// its KV is read over NIXL (remote) until the read lands at xferAt
	// (0: not started); a read that fails (xferFails) is recomputed here.
	remote    bool
	xferFails bool
	xferAt    time.Duration
	external  int // prompt tokens whose KV came over the transfer

	out       int // output tokens written
	computed  int // tokens whose KV is computed
	blocks    int // private KV blocks held on the GPU
	cpuBlocks int // V0: blocks swapped out to CPU
	cachedHit int // prompt tokens served from the prefix cache at first schedule
	sched     int // tokens scheduled in the current step

	scheduled time.Duration // first scheduled (-1: never)
	firstTok  time.Duration // first token (-1: none yet)
	lastTok   time.Duration // last token, or arrival before the first
	counted   bool          // V1: prompt tokens counted (at the first token)
}

// numTokens is prompt plus output so far: what the KV cache must hold.
func (r *request) numTokens() int { return r.prompt + r.out }

func (r *request) decoding() bool { return r.computed >= r.prompt && r.numTokens()-r.computed == 1 }

// requestPool recycles requests: an engine at steady state allocates none.
type requestPool struct{ free []*request }

func (p *requestPool) get() *request {
	if n := len(p.free); n > 0 {
		r := p.free[n-1]
		p.free = p.free[:n-1]
		*r = request{}
		return r
	}
	return &request{}
}

func (p *requestPool) put(r *request) { p.free = append(p.free, r) }
