package ui

import (
	"fmt"
	"math"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// t0 is the fixed time of every fixture frame.
var t0 = time.Date(2026, 11, 22, 14, 5, 0, 0, time.UTC)

var nan = math.NaN()

// rng is a tiny deterministic generator, so fixtures never change.
type rng uint64

func (r *rng) next() float64 {
	*r = *r*6364136223846793005 + 1442695040888963407
	return float64(uint64(*r)>>11) / float64(1<<53)
}

// quantiles over vLLM V1's latency buckets (1 ms … 2560 s).
func quantiles(p50 float64) diagnose.Quantiles {
	return diagnose.Quantiles{P50: p50, P90: p50 * 2.2, P95: p50 * 2.8, P99: p50 * 4.5, Mean: p50 * 1.3, Count: 1200,
		Lowest: 0.001, Highest: 2560, Bounds: ttftBounds}
}

// queueBounds are vLLM V1's request queue-time bucket bounds.
var queueBounds = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}

// ttftBounds are vLLM V1's time-to-first-token bucket bounds.
var ttftBounds = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}

// queueQuantiles: vLLM's queue-time buckets start at 0.3 s, so a short
// wait is only known to be under it.
func queueQuantiles(p50 float64) diagnose.Quantiles {
	q := quantiles(p50)
	q.Lowest, q.Highest, q.Bounds = 0.3, 7680, queueBounds
	return q
}

func unknownQuantiles() diagnose.Quantiles {
	return diagnose.Quantiles{P50: nan, P90: nan, P95: nan, P99: nan, Mean: nan, Count: 0, Lowest: nan, Highest: nan}
}

// fixtureStats is a busy V1 engine; load scales it (0..1).
func fixtureStats(load float64, engines int) diagnose.Stats {
	return diagnose.Stats{
		Span: 60 * time.Second, Engines: engines,
		TTFT: quantiles(0.06 + 0.25*load), ITL: quantiles(0.012 + 0.01*load), TPOT: quantiles(0.013),
		E2E: quantiles(1.5 + 3*load), Queue: queueQuantiles(0.002 + 0.2*load*load),
		Prefill: quantiles(0.04), Decode: quantiles(1.2),
		KVUsage: 0.35 + 0.62*load, KVUsageMax: math.Min(1, 0.40+0.62*load), KVCapacityTokens: 458752 * float64(engines),
		NumGPUBlocks: 28672 * float64(engines), BlockSize: 16, GPUMemUtil: 0.9,
		PrefixCaching: sources.TriYes, PrefixHitRatio: 0.42 - 0.2*load, PrefixQueryRate: 9000,
		PreemptionsRate: math.Max(0, (load-0.8)*40), Swapped: nan, CPUKVUsage: nan,
		Running: math.Round(20 + 200*load), Waiting: math.Round(math.Max(0, (load-0.6)*60)),
		WaitingCapacity: math.Round(math.Max(0, (load-0.6)*50)), WaitingDeferred: 0,
		PromptTokRate: 4000 + 9000*load, GenTokRate: 800 + 2200*load, ReqRate: 2 + 6*load,
		Finish: []diagnose.FinishShare{
			{Reason: "stop", PerSec: 1.5 + 5*load, Share: 0.78 - 0.1*load},
			{Reason: "length", PerSec: 0.4, Share: 0.2},
			{Reason: "abort", PerSec: 0.1 * load, Share: 0.02 + 0.1*load},
		},
		AbortShare: 0.02 + 0.1*load, AvgPromptLen: 1830, AvgGenLen: 412, MeanIterTokens: 310, PromptCachedRate: 2000,
		// No speculative decoding, no KV connector: not exposed.
		SpecDraftRate: nan, SpecDraftTokRate: nan, SpecAcceptedRate: nan,
		SpecAcceptRate: nan, SpecAcceptLen: nan, SpecDraftsPerStep: nan,
		KVXferFailRate: nan, KVExpiredRate: nan, KVOffloadRate: nan,
	}
}

// fixtureSpark is n points ending at t0, a wave with a rising tail and a
// few missing points (a failed poll).
func fixtureSpark(n int, load float64, seed uint64) []diagnose.SparkPoint {
	r := rng(seed)
	pts := make([]diagnose.SparkPoint, n)
	for i := range pts {
		x := float64(i) / float64(n)
		wave := 0.5 + 0.35*math.Sin(x*9+float64(seed)) + 0.15*r.next()
		l := math.Min(1, load*(0.6+0.5*x)*wave+0.1)
		st := fixtureStats(l, 1)
		p := diagnose.SparkPoint{UnixMilli: t0.Add(time.Duration(i-n+1) * time.Second).UnixMilli()}
		for k := range p.V {
			p.V[k] = float32(nan)
		}
		set := func(s diagnose.Spark, v float64) { p.V[s] = float32(v) }
		set(diagnose.SpTTFT, st.TTFT.P95)
		set(diagnose.SpITL, st.ITL.P95)
		set(diagnose.SpE2E, st.E2E.P95)
		set(diagnose.SpQueue, st.Queue.P95)
		set(diagnose.SpKV, st.KVUsage)
		set(diagnose.SpPrefixHit, st.PrefixHitRatio)
		set(diagnose.SpPreempt, st.PreemptionsRate)
		set(diagnose.SpRunning, st.Running)
		set(diagnose.SpWaiting, st.Waiting)
		set(diagnose.SpPromptTok, st.PromptTokRate)
		set(diagnose.SpGenTok, st.GenTokRate)
		set(diagnose.SpReq, st.ReqRate)
		set(diagnose.SpAbort, st.AbortShare)
		if i%53 == 40 {
			for k := range p.V {
				p.V[k] = float32(nan)
			}
		}
		pts[i] = p
	}
	return pts
}

func fixtureFindings() []diagnose.Finding {
	return []diagnose.Finding{
		{
			Rule: "kv_cache_thrashing", Severity: diagnose.SevCritical, Target: "replica-1",
			FirstSeen: t0.Add(-3*time.Minute - 12*time.Second), LastSeen: t0,
			Title: "KV cache thrashing", Summary: diagnose.Plain("preemptions 22/s, KV 97% for 3m"),
			Evidence: []diagnose.Evidence{{Name: "preemptions", Num: 22, Unit: diagnose.UnitPerSec, Window: time.Minute},
				{Name: "KV usage", Num: 0.97, Unit: diagnose.UnitRatio}},
			Explain: diagnose.Plain("The scheduler admits more sequences than the KV cache can hold, so running requests are preempted " +
				"and their KV blocks recomputed. Throughput falls while latency rises for everyone."),
			Action: diagnose.Plain("lower --max-num-seqs so the batch fits the cache"),
			Flags:  []diagnose.FlagChange{{Flag: "--max-num-seqs", From: diagnose.Str("256"), To: diagnose.Str("96"), Why: diagnose.Plain("96 sequences × 4.7k tokens average context fit in 458k tokens of KV cache")}},
		},
		{
			Rule: "slo_breach", Severity: diagnose.SevWarning, Target: "replica-0", Model: "meta-llama/Llama-3.1-8B-Instruct",
			FirstSeen: t0.Add(-70 * time.Second), LastSeen: t0,
			Title: "TTFT over the chat SLO", Summary: diagnose.Plain("TTFT p95 820ms > 500ms for 1m10s"),
			Evidence: []diagnose.Evidence{{Name: "TTFT p95", Num: 0.82, Unit: diagnose.UnitSeconds, Window: time.Minute, Lowest: 0.001, Highest: 60}},
			Explain:  diagnose.Plain("Time to first token is over the target of the chat profile. Prompts wait in the queue before prefill starts."),
			Action:   diagnose.Plain("add replicas or enable chunked prefill"),
			Flags:    []diagnose.FlagChange{{Flag: "--enable-chunked-prefill", To: diagnose.Str("true"), Why: diagnose.Plain("long prompts stop blocking decode steps")}},
		},
		{
			Rule: "abort_share", Severity: diagnose.SevInfo, Target: "replica-4",
			FirstSeen: t0.Add(-10 * time.Minute), LastSeen: t0,
			Title: "Clients abort 12% of requests", Summary: diagnose.Plain("abort 12% of finished requests over 1m"),
			Explain: diagnose.Plain("Clients give up before the answer is complete, usually on timeouts."),
			Action:  diagnose.Plain("check client timeouts against E2E p99"),
		},
	}
}

func fixtureGPU(n int) sources.GPUSnapshot {
	g := sources.GPUSnapshot{Time: t0, Source: "simulated", Simulated: true}
	for i := 0; i < n; i++ {
		d := sources.GPU{
			Index: i, Name: "NVIDIA H100 80GB HBM3", UUID: fmt.Sprintf("GPU-sim-%d", i),
			UtilGPU: float64(60 + 5*i%40), UtilMem: 40, MemUsed: 72.5 * (1 << 30), MemTotal: 80 * (1 << 30),
			TempC: float64(58 + 3*i), TempSlowdownC: 87, PowerW: float64(380 + 30*i), PowerLimitW: 700,
			SMClockMHz: 1980, MemClockMHz: 2619, ECCUncorrected: 0, RetiredPages: 0, PCIeTxBps: nan, PCIeRxBps: nan,
			Processes: []sources.GPUProcess{{PID: 4242 + i/2, Name: "python3", UsedBytes: 71.9 * (1 << 30)}},
		}
		if i == 5 {
			d.Throttled = true
			d.ClockEvents = []string{"SW power cap"}
		}
		if i == 7 {
			d.TempC = 84
		}
		g.GPUs = append(g.GPUs, d)
	}
	return g
}

// fixtureGPUSeries is each GPU's utilization history, a wave per device.
func fixtureGPUSeries(g *sources.GPUSnapshot) []diagnose.GPUSeries {
	out := make([]diagnose.GPUSeries, len(g.GPUs))
	for i, d := range g.GPUs {
		s := diagnose.GPUSeries{Index: d.Index, UUID: d.UUID, Name: d.Name}
		for k := 0; k < 120; k++ {
			u := d.UtilGPU * (0.75 + 0.25*math.Sin(float64(k)/7+float64(i)))
			s.Points = append(s.Points, diagnose.GPUPoint{Time: t0.Add(time.Duration(k-119) * time.Second), UtilGPU: u,
				MemUsed: d.MemUsed, MemTotal: d.MemTotal, TempC: d.TempC, PowerW: d.PowerW, UtilMem: nan})
		}
		if d.Throttled {
			s.ThrottledSince = t0.Add(-2*time.Minute - 5*time.Second)
		}
		out[i] = s
	}
	return out
}

type fixtureOpts struct {
	endpoints int
	gpus      int
	findings  bool
}

// fixtureFrame is a fleet at t0: replica-1 is a 4-engine data-parallel
// endpoint near KV exhaustion, replica-2 is down, replica-3 stale,
// replica-4 restarted, the rest busy.
func fixtureFrame(o fixtureOpts) *diagnose.Frame {
	fr := &diagnose.Frame{Time: t0, Window: time.Minute, Interval: time.Second}
	r := rng(7)
	models := []string{"meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct"}
	for i := 0; i < o.endpoints; i++ {
		load := 0.2 + 0.6*r.next()
		e := diagnose.EndpointView{
			Index: i, Name: fmt.Sprintf("replica-%d", i), State: diagnose.StateUp,
			Since: t0.Add(-time.Duration(30+i*7) * time.Minute), LastAttempt: t0, LastSuccess: t0,
			ScrapeDuration: 11 * time.Millisecond, Kind: sources.KindEngine,
			Version: sources.VersionRange{Gen: sources.GenV1, Min: sources.Version{Major: 0, Minor: 10, Patch: 1}, Max: sources.Version{Major: 0, Minor: 10, Patch: 1}},
			Models:  []string{models[i%3/2]}, Samples: 360, RSS: 2.1 * (1 << 30), MaxNumSeqs: 256,
			GPU: diagnose.EndpointGPU{MemBytes: nan, Note: "not on this host"},
		}
		engines := 1
		if i == 1 {
			engines, load = 4, 0.97
		}
		e.Stats = fixtureStats(load, engines)
		e.Spark = fixtureSpark(240, load, uint64(i+1))
		e.Subs = []diagnose.SubView{{Key: sources.SubKey{Model: e.Models[0]}, Stats: e.Stats}}
		if engines > 1 {
			e.Subs = nil
			for k := 0; k < engines; k++ {
				s := fixtureStats(load-0.04*float64(k), 1)
				e.Subs = append(e.Subs, diagnose.SubView{Key: sources.SubKey{Model: e.Models[0], Engine: fmt.Sprint(k)}, Stats: s})
			}
			e.MaxNumSeqs = 0
			e.GPU = diagnose.EndpointGPU{GPUs: []int{0, 1, 2, 3}, MemBytes: 4 * 71.9 * (1 << 30), PIDs: []int{4242, 4243, 4244, 4245, 4246},
				Root: 4242, RootName: "vllm", UtilGPU: 67.5}
		}
		switch i {
		case 2:
			e.State, e.Since = diagnose.StateDown, t0.Add(-42*time.Second)
			e.LastError = "dial tcp 127.0.0.1:8002: connect: connection refused"
			e.LastSuccess = t0.Add(-44 * time.Second)
		case 3:
			e.State, e.Since = diagnose.StateStale, t0.Add(-25*time.Second)
			e.LastSuccess = t0.Add(-30 * time.Second)
		case 4:
			e.RestartedAt = t0.Add(-3 * time.Minute)
			e.Since = e.RestartedAt
		}
		if i == 6 {
			// An engine that has not served a request in the window.
			e.Stats.TTFT, e.Stats.ITL, e.Stats.E2E, e.Stats.Queue = unknownQuantiles(), unknownQuantiles(), unknownQuantiles(), unknownQuantiles()
			e.Stats.GenTokRate, e.Stats.PromptTokRate, e.Stats.ReqRate = 0, 0, 0
			e.Stats.Finish, e.Stats.AbortShare = nil, nan
			e.Stats.KVUsage, e.Stats.Running, e.Stats.Waiting = 0, 0, 0
			for k := range e.Spark {
				for _, sp := range []diagnose.Spark{diagnose.SpTTFT, diagnose.SpITL, diagnose.SpE2E, diagnose.SpQueue, diagnose.SpAbort} {
					e.Spark[k].V[sp] = float32(nan)
				}
			}
		}
		fr.Endpoints = append(fr.Endpoints, e)
	}
	if o.findings {
		fr.Findings = fixtureFindings()
		for _, x := range fr.Findings {
			for i := range fr.Endpoints {
				if fr.Endpoints[i].Name == x.Target {
					fr.Endpoints[i].Findings = append(fr.Endpoints[i].Findings, x)
				}
			}
		}
	}
	fr.Fleet.Total = len(fr.Endpoints)
	for i := range fr.Endpoints {
		if fr.Endpoints[i].State == diagnose.StateUp {
			fr.Fleet.Up++
		}
	}
	fr.Fleet.Stats = fixtureStats(0.55, 8)
	fr.Fleet.Spark = fixtureSpark(240, 0.55, 99)
	fr.Fleet.Models = []diagnose.ModelView{
		{Model: models[0], Endpoints: max(1, o.endpoints-o.endpoints/3), Stats: fixtureStats(0.6, 6)},
		{Model: models[1], Endpoints: o.endpoints / 3, Stats: fixtureStats(0.4, 2)},
	}
	if o.gpus > 0 {
		fr.GPU = fixtureGPU(o.gpus)
		fr.GPUSeries = fixtureGPUSeries(&fr.GPU)
	} else {
		fr.GPU = sources.GPUSnapshot{Time: t0, Unavailable: "NVML unavailable: libnvidia-ml.so.1 not found"}
	}
	return fr
}
