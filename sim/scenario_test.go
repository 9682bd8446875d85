package sim_test

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
)

// Scenario tests run each scenario at accelerated time through the real
// pipeline (exposition → sources.Normalizer → diagnose.Engine) and pin the
// symptom ranges the diagnosis rules will look for. Each starts its incident
// after 30 s of normal traffic and is read over diagnose's 60 s window at
// 4 minutes.
var scenarioSeed = uint64(envInt("SIM_SEED", 7))

const (
	scenarioStart = 30 * time.Second
	scenarioRun   = 4 * time.Minute
)

func scenarioFleet(profile string, specs ...sim.ScenarioSpec) sim.FleetConfig {
	return one(sim.ReplicaConfig{Profile: profile, Scenarios: specs})
}

func at(name string, d time.Duration) sim.ScenarioSpec { return sim.ScenarioSpec{Name: name, Delay: d} }

// stats runs a one-replica fleet and returns its endpoint view at the end,
// over diagnose's default 60 s window (or the one given).
func stats(t *testing.T, cfg sim.FleetConfig, window ...time.Duration) diagnose.EndpointView {
	t.Helper()
	p := newPipeline(t, cfg, scenarioSeed, window...)
	return p.run(scenarioRun).Endpoints[0]
}

// long is a window over everything after a scenario starts, for comparing
// rates that bursts make noisy over one minute.
const long = scenarioRun - 2*scenarioStart

func TestScenarioHealthy(t *testing.T) {
	t.Parallel()
	for _, prof := range []string{"v0.6", "v0.10", "v0.11", "latest"} {
		t.Run(prof, func(t *testing.T) {
			v := stats(t, scenarioFleet(prof, at("healthy", 0)))
			s := v.Stats
			switch {
			case v.State != diagnose.StateUp:
				t.Fatalf("state %v", v.State)
			case s.PreemptionsRate != 0:
				t.Errorf("preemptions %.2f/s", s.PreemptionsRate)
			case !(s.TTFT.P95 < 0.5):
				t.Errorf("TTFT p95 %.3fs, want well under 500ms", s.TTFT.P95)
			case !(s.ITL.P95 < 0.05):
				t.Errorf("ITL p95 %.3fs", s.ITL.P95)
			case !(s.Waiting <= 2):
				t.Errorf("waiting %v", s.Waiting)
			case !(s.KVUsage < 0.3):
				t.Errorf("KV %.2f", s.KVUsage)
			case !(s.ReqRate > 1.5 && s.ReqRate < 6):
				t.Errorf("%.2f req/s for 3 req/s of traffic", s.ReqRate)
			case !(s.AbortShare < 0.05):
				t.Errorf("abort share %.3f", s.AbortShare)
			}
		})
	}
}

func TestScenarioBusy(t *testing.T) {
	t.Parallel()
	h := stats(t, scenarioFleet("latest", at("healthy", 0)), long).Stats
	s := stats(t, scenarioFleet("latest", at("busy", scenarioStart)), long).Stats
	if s.PreemptionsRate != 0 || !(s.TTFT.P95 < 0.5) || !(s.Waiting < 5) {
		t.Errorf("busy is not healthy: preempt %.2f/s, TTFT p95 %.3fs, waiting %v", s.PreemptionsRate, s.TTFT.P95, s.Waiting)
	}
	if !(s.ReqRate > 1.4*h.ReqRate) || !(s.MeanIterTokens > 1.4*h.MeanIterTokens) || !(s.GenTokRate > 1.4*h.GenTokRate) {
		t.Errorf("busy %.1f req/s, %.0f tokens/step, %.0f gen tok/s vs healthy %.1f, %.0f, %.0f",
			s.ReqRate, s.MeanIterTokens, s.GenTokRate, h.ReqRate, h.MeanIterTokens, h.GenTokRate)
	}
}

func TestScenarioKVThrashing(t *testing.T) {
	t.Parallel()
	for _, prof := range []string{"v0.6", "latest"} {
		t.Run(prof, func(t *testing.T) {
			h := stats(t, scenarioFleet(prof, at("healthy", 0))).Stats
			p := newPipeline(t, scenarioFleet(prof, at("kv-thrashing", scenarioStart)), scenarioSeed)
			var kv []float64
			p.each = func(_ int, sc sources.Scrape) {
				if p.fleet.Elapsed() > scenarioRun-time.Minute {
					kv = append(kv, sc.Data.Subs[0].Gauges[sources.GKVUsage])
				}
			}
			s := p.run(scenarioRun).Endpoints[0].Stats
			kvMean := 0.0
			for _, v := range kv {
				kvMean += v / float64(len(kv))
			}
			total := p.last[0].Data.Subs[0].Counters[sources.CPreemptions]
			// V1 re-admits a preempted request as soon as its first chunk
			// fits, so it preempts continuously; V0 waits for room for the
			// whole sequence and preempts in bouts.
			if !(slices.Max(kv) >= 0.97) || !(kvMean >= 0.9) || (prof == "latest" && !(s.PreemptionsRate > 0.2)) || !(total >= 5) {
				t.Errorf("KV up to %.3f (mean %.3f), preemptions %.2f/s (%v in all): want KV at 90–100%% with preemptions",
					slices.Max(kv), kvMean, s.PreemptionsRate, total)
			}
			if !(s.TTFT.P95 > 3) || !(s.TTFT.P95 > 20*h.TTFT.P95) {
				t.Errorf("TTFT p95 %.2fs vs healthy %.3fs", s.TTFT.P95, h.TTFT.P95)
			}
		})
	}
}

func TestScenarioPrefillStarvation(t *testing.T) {
	t.Parallel()
	v := stats(t, scenarioFleet("latest", at("prefill-starvation", scenarioStart)))
	s := v.Stats
	if !(s.TTFT.P95 > 5) || !(s.ITL.P50 < 0.05) || !(s.Waiting > 20) {
		t.Errorf("TTFT p95 %.1fs, ITL p50 %.3fs, waiting %v: want TTFT > 5s, normal ITL, a growing queue", s.TTFT.P95, s.ITL.P50, s.Waiting)
	}
	if !(s.Running >= 0.9*float64(v.MaxNumSeqs)) || v.MaxNumSeqs != 48 {
		t.Errorf("running %v of max_num_seqs %d: the decode batch should be full", s.Running, v.MaxNumSeqs)
	}
	if s.PreemptionsRate != 0 || !(s.KVUsage < 0.8) {
		t.Errorf("preemptions %.2f/s, KV %.2f: the cache is not the problem here", s.PreemptionsRate, s.KVUsage)
	}
	if !(s.Queue.P95 > 10*s.Prefill.P95) {
		t.Errorf("queue p95 %.1fs vs prefill p95 %.2fs: requests should wait, not prefill", s.Queue.P95, s.Prefill.P95)
	}
}

func TestScenarioSwapping(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, scenarioFleet("v0.6", at("swapping", scenarioStart)), scenarioSeed)
	scrapes, swapped, maxCPU, maxKV := 0, 0, 0.0, 0.0
	p.each = func(_ int, s sources.Scrape) {
		if s.Err != nil || p.fleet.Elapsed() < 2*scenarioStart {
			return
		}
		g := s.Data.Subs[0].Gauges
		scrapes++
		if g[sources.GSwapped] > 0 {
			swapped++
		}
		maxCPU = math.Max(maxCPU, g[sources.GCPUKVUsage])
		maxKV = math.Max(maxKV, g[sources.GKVUsage])
	}
	s := p.run(scenarioRun).Endpoints[0].Stats
	if frac := float64(swapped) / float64(scrapes); frac < 0.2 || !(maxCPU > 0.05) {
		t.Errorf("swapped > 0 in %.0f%% of scrapes, CPU KV usage up to %.2f", 100*frac, maxCPU)
	}
	if !(s.PreemptionsRate > 0.2) || !(maxKV > 0.95) {
		t.Errorf("preemptions %.2f/s, KV up to %.2f", s.PreemptionsRate, maxKV)
	}
	if _, err := sim.NewFleet(scenarioFleet("latest", at("swapping", 0)), 1); err == nil {
		t.Error("swapping on V1 should be refused: V1 never swaps")
	}
}

func TestScenarioMemoryLeak(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, scenarioFleet("latest", at("memory-leak", scenarioStart)), scenarioSeed)
	var rss []float64
	var gpuMem []float64
	p.each = func(_ int, s sources.Scrape) {
		if p.fleet.Elapsed()%(30*time.Second) == 0 {
			rss = append(rss, s.Data.Proc[sources.PRSS])
			g := p.fleet.GPUs().Sample(context.Background())
			gpuMem = append(gpuMem, g.GPUs[0].MemUsed)
		}
	}
	s := p.run(scenarioRun).Endpoints[0].Stats
	// The same traffic without the leak: a scenario starting at the same
	// time redraws arrivals identically.
	h := stats(t, scenarioFleet("latest", at("healthy", scenarioStart))).Stats
	grew := rss[len(rss)-1] - rss[1]
	if grew < 150<<20 {
		t.Errorf("RSS grew %.0f MiB in 3 minutes: %v", grew/(1<<20), rss)
	}
	if gpuMem[len(gpuMem)-1] <= gpuMem[1] {
		t.Errorf("GPU memory did not grow: %v", gpuMem)
	}
	if math.Abs(s.ReqRate-h.ReqRate) > 0.25*h.ReqRate || s.PreemptionsRate != 0 {
		t.Errorf("load should stay flat: %.2f req/s vs %.2f healthy", s.ReqRate, h.ReqRate)
	}
}

func TestScenarioGPUUnderutilization(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, scenarioFleet("latest", at("gpu-underutilization", scenarioStart)), scenarioSeed)
	var util []float64
	p.each = func(int, sources.Scrape) {
		if p.fleet.Elapsed() > scenarioRun-time.Minute {
			util = append(util, p.fleet.GPUs().Sample(context.Background()).GPUs[0].UtilGPU)
		}
	}
	s := p.run(scenarioRun).Endpoints[0].Stats
	mean := 0.0
	for _, u := range util {
		mean += u / float64(len(util))
	}
	if !(mean < 50) || !(s.Running <= 3) || !(s.ReqRate < 0.6) || !(s.Waiting < 5) {
		t.Errorf("GPU util %.0f%%, running %v, %.2f req/s, waiting %v: want an idle GPU with tiny batches",
			mean, s.Running, s.ReqRate, s.Waiting)
	}
	busy := newPipeline(t, scenarioFleet("latest", at("busy", 0)), scenarioSeed)
	busy.run(time.Minute)
	if u := busy.fleet.GPUs().Sample(context.Background()).GPUs[0].UtilGPU; !(u > 80) {
		t.Errorf("a busy engine shows only %.0f%% GPU utilization", u)
	}
}

func TestScenarioPrefixCacheMiss(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, scenarioFleet("latest", at("prefix-cache-miss", scenarioStart+30*time.Second)), scenarioSeed)
	before := p.run(scenarioStart + 30*time.Second).Endpoints[0].Stats
	after := p.run(scenarioRun - scenarioStart - 30*time.Second).Endpoints[0].Stats
	if before.PrefixCaching != sources.TriYes || after.PrefixCaching != sources.TriYes {
		t.Errorf("prefix caching %v/%v, want on", before.PrefixCaching, after.PrefixCaching)
	}
	if !(before.PrefixHitRatio > 0.5) || !(after.PrefixHitRatio < 0.1) {
		t.Errorf("hit ratio %.2f before, %.2f after: want a collapse below 10%%", before.PrefixHitRatio, after.PrefixHitRatio)
	}
	// Every request now prefills its whole system prompt.
	if !(after.TTFT.Mean > 1.5*before.TTFT.Mean) || !(after.TTFT.P95 > before.TTFT.P95) {
		t.Errorf("TTFT mean %.3fs p95 %.3fs before, mean %.3fs p95 %.3fs after", before.TTFT.Mean, before.TTFT.P95, after.TTFT.Mean, after.TTFT.P95)
	}
}

func TestScenarioAbortStorm(t *testing.T) {
	t.Parallel()
	s := stats(t, scenarioFleet("latest", at("abort-storm", scenarioStart))).Stats
	if !(s.AbortShare > 0.1) {
		t.Errorf("abort share %.2f, want > 10%%", s.AbortShare)
	}
	i := slices.IndexFunc(s.Finish, func(f diagnose.FinishShare) bool { return f.Reason == sources.FinishAbort })
	if i < 0 || !(s.Finish[i].PerSec > 1) {
		t.Errorf("finish reasons %+v", s.Finish)
	}
	// Without counting client aborts (what V1 releases really do) the storm
	// is invisible in finished_reason.
	cfg := scenarioFleet("latest", at("abort-storm", scenarioStart))
	cfg.HideClientAborts = true
	if h := stats(t, cfg).Stats; !(h.AbortShare < 0.02) {
		t.Errorf("hidden aborts still counted: %.2f", h.AbortShare)
	}
}

func TestScenarioQueueBacklog(t *testing.T) {
	t.Parallel()
	v := stats(t, scenarioFleet("latest", at("queue-backlog", scenarioStart)))
	s := v.Stats
	if !(s.Waiting > 20) || !(s.Queue.P95 > 5) || !(s.TTFT.P95 > 5) {
		t.Errorf("waiting %v, queue p95 %.1fs, TTFT p95 %.1fs", s.Waiting, s.Queue.P95, s.TTFT.P95)
	}
	// Saturated with prefills. (The batch itself shrinks once the queue
	// is longer than the clients' timeout: what gets admitted is about to
	// be abandoned.)
	if !(s.MeanIterTokens > 500) {
		t.Errorf("%.0f tokens per step", s.MeanIterTokens)
	}
}

func TestScenarioRestart(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, scenarioFleet("latest", at("restart", 90*time.Second)), scenarioSeed)
	p.run(89 * time.Second)
	old := p.last[0].Data
	oldGen := old.Subs[0].Counters[sources.CGenTokens]
	oldCreated := old.Subs[0].Created[sources.CGenTokens]
	oldStart := old.Proc[sources.PStartTime]
	refused := 0
	p.each = func(_ int, s sources.Scrape) {
		if s.Err != nil {
			refused++
		}
	}
	fr := p.run(31 * time.Second)
	if refused != 20 {
		t.Errorf("%d refused scrapes, want 20 (the model loads for 20 s)", refused)
	}
	s := p.last[0]
	if s.Err != nil {
		t.Fatal(s.Err)
	}
	sub := s.Data.Subs[0]
	if !(sub.Counters[sources.CGenTokens] < oldGen/2) {
		t.Errorf("generation tokens %v after the restart, %v before", sub.Counters[sources.CGenTokens], oldGen)
	}
	if start := s.Data.Proc[sources.PStartTime]; math.Abs(start-oldStart-90) > 0.5 {
		t.Errorf("process_start_time_seconds %v → %v, want +90 s", oldStart, start)
	}
	if c := sub.Created[sources.CGenTokens]; !(c > oldCreated+90) {
		t.Errorf("_created %v → %v", oldCreated, c)
	}
	if fr.Endpoints[0].RestartedAt.IsZero() {
		t.Error("diagnose did not see a restart")
	}
}

func TestScenarioFlapping(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, scenarioFleet("latest", at("flapping", scenarioStart)), scenarioSeed)
	var down []time.Duration
	var states []diagnose.State
	p.each = func(_ int, s sources.Scrape) {
		if s.Err != nil {
			down = append(down, p.fleet.Elapsed())
		}
	}
	for range 8 {
		fr := p.run(15 * time.Second)
		states = append(states, fr.Endpoints[0].State)
	}
	// Down [30s, 50s) and [90s, 110s): scrapes at 30…49 and 90…109.
	if len(down) != 40 || down[0] != 30*time.Second || down[19] != 49*time.Second || down[20] != 90*time.Second {
		t.Errorf("refused at %v", down)
	}
	want := []diagnose.State{diagnose.StateUp, diagnose.StateDown, diagnose.StateDown, diagnose.StateUp,
		diagnose.StateUp, diagnose.StateDown, diagnose.StateDown, diagnose.StateUp}
	if !slices.Equal(states, want) {
		t.Errorf("states every 15 s %v, want %v", states, want)
	}
	fr := p.engine.Frame(p.fleet.Now())
	if !fr.Endpoints[0].RestartedAt.IsZero() {
		t.Error("a network flap is not a restart: counters must continue")
	}
}

func TestScenarioThermalThrottle(t *testing.T) {
	t.Parallel()
	// The same traffic as busy (same start, same rate), only hotter.
	b := stats(t, scenarioFleet("latest", at("busy", scenarioStart)), long).Stats
	p := newPipeline(t, scenarioFleet("latest", at("thermal-throttle", scenarioStart)), scenarioSeed, long)
	throttled, hottest := 0, 0.0
	p.each = func(int, sources.Scrape) {
		g := p.fleet.GPUs().Sample(context.Background()).GPUs[0]
		hottest = math.Max(hottest, g.TempC)
		if g.Throttled && g.ClockEventBits&sources.ClockHWThermal != 0 && slices.Contains(g.ClockEvents, "thermal slowdown (hardware)") && g.SMClockMHz < 1500 {
			throttled++
		}
	}
	s := p.run(scenarioRun).Endpoints[0].Stats
	if throttled < 30 || hottest < 86 {
		t.Errorf("throttled in %d readings, hottest %.0f°C", throttled, hottest)
	}
	if !(s.ITL.Mean > 1.2*b.ITL.Mean) {
		t.Errorf("mean ITL %.4fs throttled vs %.4fs at the same load", s.ITL.Mean, b.ITL.Mean)
	}
}

// Scenario rates are scaled to the model's speed, so the slower preset
// shows the same states.
func TestScenarioSecondModel(t *testing.T) {
	t.Parallel()
	qwen := sim.Models[1]
	cfg := func(sc string) sim.FleetConfig {
		return one(sim.ReplicaConfig{Model: qwen, Scenarios: []sim.ScenarioSpec{at(sc, scenarioStart)}})
	}
	for _, sc := range []string{"healthy", "busy"} {
		if s := stats(t, cfg(sc)).Stats; s.PreemptionsRate != 0 || !(s.TTFT.P95 < 1) || !(s.Waiting < 5) {
			t.Errorf("%s on %s: preempt %.2f/s, TTFT p95 %.2fs, waiting %v", sc, qwen.Name, s.PreemptionsRate, s.TTFT.P95, s.Waiting)
		}
	}
	if s := stats(t, cfg("kv-thrashing")).Stats; !(s.KVUsage > 0.9) || !(s.PreemptionsRate > 0.1) {
		t.Errorf("kv-thrashing on %s: KV %.2f, preempt %.2f/s", qwen.Name, s.KVUsage, s.PreemptionsRate)
	}
}

// The demo fleet: healthy for its first minute, then five incidents while
// qwen-a stays healthy.
func TestDemoFleetDevelopsIncidents(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, sim.DemoConfig(80*time.Second), scenarioSeed)
	byName := func(fr *diagnose.Frame, name string) diagnose.EndpointView {
		for _, e := range fr.Endpoints {
			if e.Name == name {
				return e
			}
		}
		t.Fatalf("no endpoint %s", name)
		return diagnose.EndpointView{}
	}
	fr := p.run(75 * time.Second)
	for _, e := range fr.Endpoints {
		s := e.Stats
		if e.State != diagnose.StateUp || s.PreemptionsRate != 0 || !(s.TTFT.P95 < 1) || !(s.Waiting < 5) {
			t.Errorf("%s before the incidents: %v, preempt %.2f/s, TTFT p95 %.2fs, waiting %v", e.Name, e.State, s.PreemptionsRate, s.TTFT.P95, s.Waiting)
		}
	}
	var flapped, throttled bool
	var rss []float64
	p.each = func(i int, s sources.Scrape) {
		switch p.fleet.Replicas()[i].Name() {
		case "qwen-c":
			flapped = flapped || s.Err != nil
			if s.Err == nil {
				rss = append(rss, s.Data.Proc[sources.PRSS])
			}
		case "qwen-b":
			g := p.fleet.GPUs().Sample(context.Background()).GPUs[p.fleet.Replicas()[i].GPUIndexes()[0]]
			throttled = throttled || g.Throttled
		}
	}
	fr = p.run(3 * time.Minute)
	if s := byName(fr, "llama-a").Stats; !(s.PrefixHitRatio < 0.1) {
		t.Errorf("llama-a prefix hit ratio %.2f", s.PrefixHitRatio)
	}
	if s := byName(fr, "llama-b").Stats; !(s.KVUsage > 0.9) || !(s.PreemptionsRate > 0) {
		t.Errorf("llama-b KV %.2f, preempt %.2f/s", s.KVUsage, s.PreemptionsRate)
	}
	if e := byName(fr, "llama-dp"); e.Stats.Engines != 2 || !(e.Stats.Waiting > 20) {
		t.Errorf("llama-dp %d engines, waiting %v", e.Stats.Engines, e.Stats.Waiting)
	}
	if s := byName(fr, "qwen-a").Stats; s.PreemptionsRate != 0 || !(s.TTFT.P95 < 1) {
		t.Errorf("qwen-a should stay healthy: preempt %.2f/s, TTFT p95 %.2fs", s.PreemptionsRate, s.TTFT.P95)
	}
	if !throttled || !flapped || !(rss[len(rss)-1] > rss[0]+100<<20) {
		t.Errorf("qwen-b throttled %v, qwen-c flapped %v, RSS %.0f → %.0f MiB", throttled, flapped, rss[0]/(1<<20), rss[len(rss)-1]/(1<<20))
	}
}

// prompt-over-max-model-len: untrimmed documents against --max-model-len
// 8192 with max_tokens 1024. vLLM's API server answers every prompt +
// max_tokens over 8,192 with a 400 before the engine sees it: the share
// rejected is the log-normal's tail (median 5,000 + a 512-token system
// prompt on 60 %, σ 0.6: about 30 %), counted only in http_requests_total
// {status="4xx"}; every request the engine finished is a 2xx; and no
// vllm:* family counts a rejected one. V0 0.6 has no instrumentator.
func TestScenarioPromptOverMaxModelLen(t *testing.T) {
	t.Parallel()
	sample := func(text, series string) float64 {
		for _, l := range strings.Split(text, "\n") {
			if rest, ok := strings.CutPrefix(l, series+" "); ok {
				v, err := strconv.ParseFloat(rest, 64)
				if err != nil {
					t.Fatalf("%s: %v", l, err)
				}
				return v
			}
		}
		return math.NaN()
	}
	for _, c := range []struct {
		profile string
		model   sim.Model
	}{{"latest", sim.Model{}}, {"v0.10", sim.LookupModel("Qwen/Qwen2.5-14B-Instruct")}} {
		f, err := sim.NewFleet(one(sim.ReplicaConfig{Profile: c.profile, Model: c.model, Scenarios: []sim.ScenarioSpec{at("prompt-over-max-model-len", 0)}}), scenarioSeed)
		if err != nil {
			t.Fatal(err)
		}
		f.Advance(3 * time.Minute)
		text := string(f.Replicas()[0].Exposition(sim.FormatText))
		ok := sample(text, `http_requests_total{handler="/v1/chat/completions",method="POST",status="2xx"}`)
		bad := sample(text, `http_requests_total{handler="/v1/chat/completions",method="POST",status="4xx"}`)
		if !(bad/(ok+bad) > 0.2 && bad/(ok+bad) < 0.4) {
			t.Errorf("%s: %v answered 2xx, %v 4xx: want about 30 %% rejected", c.profile, ok, bad)
		}
		done := 0.0
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "vllm:request_success_total{") && !strings.Contains(l, `finished_reason="abort"`) {
				v, _ := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
				done += v
			}
		}
		t.Logf("%s: %v answered 2xx, %v 4xx (%.1f %% rejected), %v finished", c.profile, ok, bad, 100*bad/(ok+bad), done)
		if done != ok {
			t.Errorf("%s: the engine finished %v requests, the API server answered %v with 2xx", c.profile, done, ok)
		}
		if p := sample(text, `vllm:request_prompt_tokens_count{engine="0",model_name="`+f.Replicas()[0].Config().Model.Name+`"}`); !(p >= done && p < done+bad/2) {
			t.Errorf("%s: %v prompts counted by the engine for %v finished and %v rejected: a rejected one reached it", c.profile, p, done, bad)
		}
	}
	f, err := sim.NewFleet(scenarioFleet("v0.6", at("prompt-over-max-model-len", 0)), scenarioSeed)
	if err != nil {
		t.Fatal(err)
	}
	f.Advance(time.Minute)
	if text := string(f.Replicas()[0].Exposition(sim.FormatText)); strings.Contains(text, "http_requests_total") {
		t.Errorf("V0 0.6.6 serves http_requests_total")
	}
}
