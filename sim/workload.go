package sim

import (
	"math"
	"math/rand/v2"
	"time"
)

// Load is the traffic one replica receives and how its clients behave.
// Scenarios change it the way production traffic changes: a surge, a new
// client with long documents, a client that breaks prompt sharing.
type Load struct {
	Rate float64 // requests/s outside bursts (Poisson)
	// Bursts: the rate multiplies by BurstFactor for about BurstLen, about
	// every BurstEvery (exponential gaps; 0 disables bursts).
	BurstEvery  time.Duration
	BurstLen    time.Duration
	BurstFactor float64

	PromptMedian int     // tokens, log-normal around it
	PromptSigma  float64 // of ln(tokens)
	OutputMedian int     // tokens the model would write before stopping
	OutputSigma  float64
	MaxTokens    int // the clients' max_tokens: longer answers stop with "length"
	// NoStop is the share of answers that never end on their own: the
	// model no longer produces a stop token the server honours (a chat
	// template or tokenizer change after an upgrade), so they run on,
	// repeating themselves, to max_tokens.
	NoStop float64

	// A share of requests starts with one of PrefixGroups shared system
	// prompts of PrefixLen tokens (rounded to whole KV blocks). With
	// PrefixUnique the prefix is still there but no longer identical across
	// requests (a timestamp or request id at the top of the system prompt),
	// so the prefix cache cannot match it.
	PrefixShare  float64
	PrefixGroups int
	PrefixLen    int
	PrefixUnique bool

	// N parallel samples (n>1) on a share of requests; V0 swaps these out
	// to CPU when it preempts them.
	N      int
	NShare float64

	// Clients > 0 makes the load closed-loop: that many clients, each
	// sending its next request when the previous one ends (within the
	// replica's 100 ms sweep), so arrivals equal completions; Rate should
	// then be 0.
	Clients int

	// Adapters > 0: each request asks for one of that many LoRA adapters,
	// uniformly (a multi-tenant fine-tune service); 0: the base model.
	Adapters int

	// Untrimmed clients send prompts as they come, without keeping prompt
	// + max_tokens within --max-model-len: vLLM's API server answers the
	// longer ones 400 ("This model's maximum context length is …") before
	// the engine sees them; only http_requests_total{status="4xx"}
	// counts them.
	Untrimmed bool
	// BadShare is the share of requests the API server answers 400 for a
	// bad parameter (a client sending a field this server refuses),
	// whatever their length; like Untrimmed's, no engine sees them.
	BadShare float64

	ClientTimeout time.Duration // the client gives up after this (0: never)
	CancelShare   float64       // users who stop a response within seconds
	RetryShare    float64       // timed-out requests the client sends again
}

// ChatLoad is the default traffic: a chat application at moderate load with
// shared system prompts and occasional bursts (for the reference model; a
// replica without a Load scales the rate to its model's speed).
func ChatLoad() Load {
	return Load{
		Rate: 3, BurstEvery: 90 * time.Second, BurstLen: 10 * time.Second, BurstFactor: 2.5,
		PromptMedian: 600, PromptSigma: 0.8, OutputMedian: 180, OutputSigma: 0.7, MaxTokens: 1024,
		PrefixShare: 0.6, PrefixGroups: 6, PrefixLen: 512,
		ClientTimeout: 120 * time.Second, CancelShare: 0.01,
	}
}

// arrivals is a Markov-modulated Poisson process: exponential gaps at the
// current rate, a burst state switching on and off with exponential
// durations. Memorylessness lets it restart from any instant when the load
// changes, so a scenario that starts at t changes the traffic exactly at t.
type arrivals struct {
	rng     *rand.Rand
	next    time.Duration // next arrival (never when the rate is 0)
	inBurst bool
	switchT time.Duration // next burst-state change (never without bursts)
}

const never = time.Duration(math.MaxInt64)

func (a *arrivals) reset(now time.Duration, l *Load) {
	a.inBurst = false
	a.switchT = never
	if l.BurstEvery > 0 && l.BurstFactor > 0 {
		a.switchT = now + expDur(a.rng, l.BurstEvery)
	}
	a.schedule(now, l)
}

// schedule draws the next arrival after now, crossing burst switches.
func (a *arrivals) schedule(now time.Duration, l *Load) {
	for {
		rate := l.Rate
		if a.inBurst {
			rate *= l.BurstFactor
		}
		gap := never
		if rate > 0 {
			gap = time.Duration(a.rng.ExpFloat64() / rate * float64(time.Second))
		}
		if a.switchT == never || (gap != never && now+gap < a.switchT) {
			if gap == never {
				a.next = never
			} else {
				a.next = now + gap
			}
			return
		}
		// The state changes first: the process restarts from there.
		now = a.switchT
		a.inBurst = !a.inBurst
		mean := l.BurstEvery
		if a.inBurst {
			mean = l.BurstLen
		}
		a.switchT = now + expDur(a.rng, mean)
	}
}

func expDur(rng *rand.Rand, mean time.Duration) time.Duration {
	return time.Duration(rng.ExpFloat64()*float64(mean)) + time.Millisecond
}

// logNormal draws a positive integer around median.
func logNormal(rng *rand.Rand, median int, sigma float64) int {
	if median <= 0 {
		return 1
	}
	v := float64(median) * math.Exp(sigma*rng.NormFloat64())
	return max(1, int(v+0.5))
}

// shape draws one request's size and client behaviour.
// shape draws the request's prompt, answer and deadline; it reports false
// for a request the API server rejects (Untrimmed, over --max-model-len).
func (l *Load) shape(rng *rand.Rand, r *request, now time.Duration, maxModelLen, blockSize int) bool {
	r.arrival = now
	r.group = -1
	if l.Adapters > 0 {
		r.lora = 1 + rng.IntN(l.Adapters)
	}
	r.n = 1
	if l.N > 1 && rng.Float64() < l.NShare {
		r.n = l.N
	}
	r.maxTokens = max(1, min(l.MaxTokens, maxModelLen/2))
	prompt := logNormal(rng, l.PromptMedian, l.PromptSigma)
	if l.PrefixShare > 0 && l.PrefixLen > 0 && rng.Float64() < l.PrefixShare {
		plen := max(blockSize, l.PrefixLen/blockSize*blockSize)
		prompt += plen
		if !l.PrefixUnique && l.PrefixGroups > 0 {
			// Popular system prompts are used more: weight 1/(i+1).
			r.group = zipfIndex(rng, l.PrefixGroups)
			r.groupTokens = plen
		}
	}
	if l.BadShare > 0 && rng.Float64() < l.BadShare {
		return false
	}
	// vLLM rejects prompt + max_tokens over --max-model-len with a 400
	// that reaches none of the vllm:* metrics; most clients trim to fit.
	if l.Untrimmed && prompt+r.maxTokens > maxModelLen {
		return false
	}
	prompt = min(prompt, maxModelLen-r.maxTokens)
	if r.group >= 0 && prompt <= r.groupTokens {
		r.group = -1
	}
	r.prompt = max(1, prompt)
	out := logNormal(rng, l.OutputMedian, l.OutputSigma)
	if l.NoStop > 0 && rng.Float64() < l.NoStop {
		out = r.maxTokens
	}
	r.target = min(out, r.maxTokens)
	r.deadline, r.timeout = never, l.ClientTimeout
	if l.ClientTimeout > 0 {
		r.deadline = now + l.ClientTimeout
	}
	if l.CancelShare > 0 && rng.Float64() < l.CancelShare {
		r.deadline = min(r.deadline, now+time.Duration((0.5+7.5*rng.Float64())*float64(time.Second)))
	}
	return true
}

func zipfIndex(rng *rand.Rand, n int) int {
	total := 0.0
	for i := range n {
		total += 1 / float64(i+1)
	}
	x := rng.Float64() * total
	for i := range n {
		x -= 1 / float64(i+1)
		if x <= 0 {
			return i
		}
	}
	return n - 1
}
