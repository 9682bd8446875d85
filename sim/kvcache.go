package sim

import "time"

// kvPool is the paged KV cache of one engine, counted in blocks. Requests
// own the blocks of their private tokens; the blocks of a shared system
// prompt belong to its prefix group once computed, referenced by every
// request that matched it. Unreferenced groups stay resident (evictable)
// until an allocation needs their blocks, least recently used first, which
// is what makes the prefix cache hit or miss.
type kvPool struct {
	total     int
	blockSize int
	used      int // blocks referenced by requests (what vLLM reports as usage)
	evictable int // resident prefix blocks nobody references
	caching   bool
	groups    []prefixGroup

	// cumulative prefix-cache statistics (tokens)
	queries, hits float64
}

type prefixGroup struct {
	blocks   int
	resident bool
	refs     int
	lastUse  time.Duration
}

func newKVPool(total, blockSize int, caching bool) kvPool {
	return kvPool{total: total, blockSize: blockSize, caching: caching}
}

// usage is vllm:kv_cache_usage_perc: referenced blocks over all blocks.
func (p *kvPool) usage() float64 {
	if p.total == 0 {
		return 0
	}
	return float64(p.used) / float64(p.total)
}

// available is what an allocation may take, evicting cached prefixes.
func (p *kvPool) available() int { return p.total - p.used }

// alloc takes n blocks, evicting unreferenced prefixes if it must.
func (p *kvPool) alloc(n int) bool {
	if n <= 0 {
		return true
	}
	if n > p.total-p.used {
		return false
	}
	for p.total-p.used-p.evictable < n {
		p.evictLRU()
	}
	p.used += n
	return true
}

func (p *kvPool) free(n int) { p.used -= n }

func (p *kvPool) evictLRU() {
	best := -1
	for i := range p.groups {
		g := &p.groups[i]
		if g.resident && g.refs == 0 && (best < 0 || g.lastUse < p.groups[best].lastUse) {
			best = i
		}
	}
	g := &p.groups[best]
	g.resident = false
	p.evictable -= g.blocks
}

func (p *kvPool) group(i int) *prefixGroup {
	for len(p.groups) <= i {
		p.groups = append(p.groups, prefixGroup{})
	}
	return &p.groups[i]
}

// ownBlocks is how many private blocks r needs to hold c computed tokens.
// Parallel samples (n>1) share the prompt blocks and each own their output.
func (p *kvPool) ownBlocks(r *request, c int) int {
	shared := 0
	if r.prefixRef {
		shared = r.groupTokens
	}
	if r.n <= 1 {
		return ceilDiv(c-shared, p.blockSize)
	}
	pc := min(c, r.prompt)
	return ceilDiv(pc-shared, p.blockSize) + r.n*ceilDiv(c-pc, p.blockSize)
}

// grow makes room for r to compute n more tokens.
func (p *kvPool) grow(r *request, n int) bool {
	need := p.ownBlocks(r, r.computed+n) - r.blocks
	if !p.alloc(need) {
		return false
	}
	r.blocks += max(need, 0)
	return true
}

// lookup matches r's shared prefix against the cache on admission and
// returns the tokens served from it (counting the query either way).
func (p *kvPool) lookup(r *request, now time.Duration) int {
	if !p.caching {
		return 0
	}
	p.queries += float64(r.numTokens())
	if r.group < 0 || r.computed > 0 {
		return 0
	}
	g := p.group(r.group)
	if !g.resident {
		return 0
	}
	p.hits += float64(r.groupTokens)
	if g.refs == 0 {
		p.evictable -= g.blocks
		p.used += g.blocks
	}
	g.refs++
	g.lastUse = now
	r.prefixRef = true
	r.computed = r.groupTokens
	return r.groupTokens
}

// unlookup undoes lookup for a request that could not be admitted after all.
func (p *kvPool) unlookup(r *request, hit int, now time.Duration) {
	if !p.caching {
		return
	}
	p.queries -= float64(r.numTokens())
	p.hits -= float64(hit)
	if hit > 0 {
		p.release(r, now)
		r.computed = 0
	}
}

// publish turns the prefix blocks r has just computed into a cached group,
// unless another request got there first.
func (p *kvPool) publish(r *request, now time.Duration) {
	if !p.caching || r.group < 0 || r.prefixRef || r.computed < r.groupTokens {
		return
	}
	g := p.group(r.group)
	if g.resident {
		return
	}
	g.blocks = r.groupTokens / p.blockSize
	g.resident = true
	g.refs = 1
	g.lastUse = now
	r.prefixRef = true
	r.blocks -= g.blocks
}

// release frees everything r holds on the GPU.
func (p *kvPool) release(r *request, now time.Duration) {
	p.used -= r.blocks
	r.blocks = 0
	if r.prefixRef {
		g := &p.groups[r.group]
		g.refs--
		g.lastUse = now
		if g.refs == 0 {
			p.used -= g.blocks
			p.evictable += g.blocks
		}
		r.prefixRef = false
	}
}

// reset empties the cache (an engine restart).
func (p *kvPool) reset() {
	p.used, p.evictable = 0, 0
	p.groups = p.groups[:0]
	p.queries, p.hits = 0, 0
}

func ceilDiv(a, b int) int {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}
