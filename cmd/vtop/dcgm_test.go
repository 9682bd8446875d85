package main

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/dcgm"
	"github.com/vtop-dev/vtop/ui/format"
)

// dcgm-exporter's view of a replica whose GPU overheats feeds the GPU
// rules: eight simulated minutes of the sim's dcgm exposition, read by the
// dcgm reader and joined to the replica by its pod, name gpu_throttling on
// that replica's GPU.
func TestDCGMFeedsGPURules(t *testing.T) {
	f, err := sim.NewFleet(sim.FleetConfig{Replicas: []sim.ReplicaConfig{
		{Name: "hot", Scenarios: []sim.ScenarioSpec{{Name: "thermal-throttle"}}},
		{Name: "cool", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
	}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	rd := dcgm.NewReader()
	norms := []*sources.Normalizer{sources.NewNormalizer(), sources.NewNormalizer()}
	holders := []dcgm.Holder{{Namespace: sim.DCGMNamespace, Pod: "hot"}, {Namespace: sim.DCGMNamespace, Pod: "cool"}}
	var batches []sources.Batch
	for f.Elapsed() < 8*time.Minute {
		f.Advance(5 * time.Second)
		b := sources.Batch{Now: f.Now()}
		for i, r := range f.Replicas() {
			s := sources.Scrape{Target: r.Name(), Time: f.Now()}
			s.Data, s.Err = norms[i].Normalize(r.Exposition(sim.FormatText), sim.FormatText.ContentType())
			b.Scrapes = append(b.Scrapes, s)
		}
		rd.Begin()
		if n := rd.ParseText(f.DCGMExposition(), "127.0.0.1"); n != 0 {
			t.Fatalf("%d lines of the sim's dcgm exposition skipped", n)
		}
		devs, ev := rd.End(f.Now())
		fl := dcgm.Fleet{Devices: devs, Events: ev}
		snap, held := fl.Snapshot(f.Now(), "dcgm-exporter", holders)
		b.GPU = &snap
		for i, h := range holders {
			b.Procs = append(b.Procs, sources.TargetProcs{Target: h.Pod, Tree: sources.ProcTree{GPUs: held[i]}})
		}
		batches = append(batches, b)
	}
	o, _, err := resolve([]string{"--gpu", "none", "--interval", "5s", "127.0.0.1:1"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	o.targets = nil
	p, err := newPipelineOf(o, quiet(), replay(batches))
	if err != nil {
		t.Fatal(err)
	}
	fr := runToEnd(t, p)
	var hot diagnose.EndpointView
	for _, e := range fr.Endpoints {
		if e.Name == "hot" {
			hot = e
		}
	}
	if len(hot.GPU.GPUs) != 1 || math.IsNaN(hot.GPU.MemBytes) || hot.GPU.MemBytes <= 0 {
		t.Fatalf("hot's GPU join: %+v", hot.GPU)
	}
	g := fr.GPU.GPUs[hot.GPU.GPUs[0]]
	if g.Host != sim.DCGMNode || !strings.HasPrefix(g.Label(), "GPU ") || !g.Throttled {
		t.Errorf("hot's GPU: %+v", g)
	}
	// The GPU finding may stand alone or head the symptoms it causes.
	for _, fd := range append(fr.Findings, hot.Findings...) {
		if (fd.Rule == "gpu_throttling" && strings.Contains(fd.Target, "hot")) || strings.HasPrefix(fd.Cause, "gpu_throttling@hot") {
			return
		}
	}
	for _, fd := range fr.Findings {
		t.Logf("%s on %q (cause %q)", fd.Rule, fd.Target, fd.Cause)
	}
	t.Errorf("no gpu_throttling on hot's GPU")
}

// Through Prometheus: a running `vtop sim` with its dcgm-exporter endpoint,
// scraped as Kubernetes would (each replica's pod as a target label), fills
// the GPU panel and joins each replica to its GPU by pod.
func TestPrometheusDCGM(t *testing.T) {
	srv := promWithDCGM(t)
	hb, _ := startHub(t, "--prometheus", srv, "--backfill", "0")
	deadline := time.After(60 * time.Second)
	for {
		select {
		case fr := <-hb.Frames():
			joined := 0
			for _, e := range fr.Endpoints {
				if len(e.GPU.GPUs) == 1 && e.GPU.MemBytes > 0 {
					joined++
				}
			}
			if len(fr.GPU.GPUs) == 2 && joined == 2 {
				for _, g := range fr.GPU.GPUs {
					if math.IsNaN(g.UtilGPU) || math.IsNaN(g.TempC) || math.IsNaN(g.PowerW) || !(g.MemTotal > g.MemUsed) {
						t.Errorf("GPU reading: %+v", g)
					}
				}
				if !strings.Contains(fr.GPU.Source, "dcgm-exporter") {
					t.Errorf("GPU source %q", fr.GPU.Source)
				}
				return
			}
		case <-deadline:
			t.Fatal("no frame with both replicas joined to their GPUs in 60 s")
		}
	}
}

// promWithDCGM starts a `vtop sim` fleet of two replicas (scenario
// healthy, unless given) with its dcgm-exporter endpoint and a Prometheus scraping both as Kubernetes
// would (each replica's pod as a target label); it returns the server's
// URL once it holds the GPUs' series.
func promWithDCGM(t *testing.T, scenario ...string) string {
	sc := "healthy"
	if len(scenario) > 0 {
		sc = scenario[0]
	}
	bin := vtopBinary(t)
	urls, dcgmURL := simFleetDCGM(t, bin, "--replicas", "2", "--scenario", sc)
	var scrape strings.Builder
	scrape.WriteString("scrape_configs:\n  - job_name: vllm\n    static_configs:\n")
	for i, u := range urls {
		tg, _ := sources.ParseTarget(u)
		scrape.WriteString("      - targets: ['" + tg.Name + "']\n        labels: {namespace: " + sim.DCGMNamespace + ", pod: replica-" + string(rune('0'+i)) + "}\n")
	}
	du, _ := url.Parse(dcgmURL)
	scrape.WriteString("  - job_name: dcgm\n    static_configs:\n      - targets: ['" + du.Host + "']\n")
	srv := startPrometheus(t, nil, scrape.String())
	waitSeries(t, srv, 2)
	for i := 0; ; i++ {
		if v, ok := promValue(srv, "count(DCGM_FI_DEV_FB_USED)"); ok && v == 2 {
			break
		}
		if i == 300 {
			t.Fatal("prometheus did not scrape the dcgm endpoint in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return srv
}

// simFleetDCGM starts `vtop sim` with its dcgm-exporter endpoint and
// returns the replicas' host:port and the dcgm URL.
func simFleetDCGM(t *testing.T, bin string, args ...string) ([]string, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"sim", "--listen", "127.0.0.1:0", "--dcgm-listen", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := make(chan string, 2)
	go func() {
		r := bufio.NewReader(out)
		for i := 0; i < 2; i++ {
			l, _ := r.ReadString('\n')
			lines <- l
		}
		io.Copy(io.Discard, r)
	}()
	var got []string
	for len(got) < 2 {
		select {
		case l := <-lines:
			got = append(got, l)
		case <-time.After(10 * time.Second):
			t.Fatalf("vtop sim said %q", got)
		}
	}
	m := regexp.MustCompile(`http://127\.0\.0\.1:(\{[0-9,.]+\}|[0-9]+)/metrics`).FindStringSubmatch(got[0])
	d := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/metrics`).FindString(got[1])
	if m == nil || d == "" {
		t.Fatalf("no URLs in %q", got)
	}
	var hosts []string
	for _, p := range strings.Split(strings.Trim(m[1], "{}"), ",") {
		if a, b, ok := strings.Cut(p, ".."); ok {
			lo, _ := strconv.Atoi(a)
			hi, _ := strconv.Atoi(b)
			for q := lo; q <= hi; q++ {
				hosts = append(hosts, "127.0.0.1:"+strconv.Itoa(q))
			}
			continue
		}
		hosts = append(hosts, "127.0.0.1:"+p)
	}
	return hosts, d
}

// promValue runs an instant query and returns its one value.
func promValue(base, q string) (float64, bool) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&r) != nil || len(r.Data.Result) != 1 {
		return 0, false
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// Direct mode: --dcgm reads a dcgm-exporter endpoint itself; the GPUs fill
// the report's GPU section and join a target on the exporter's host when
// the host serves that target alone.
func TestDirectDCGM(t *testing.T) {
	bin := vtopBinary(t)
	hosts, dcgmURL := simFleetDCGM(t, bin, "--replicas", "2", "--scenario", "healthy")
	code, out, errOut := runArgs(t, nil, append([]string{"--once", "-o", "json", "--window", "2s", "--interval", "500ms", "--dcgm", dcgmURL}, hosts...)...)
	if code == int(3) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Endpoints []struct {
			Name string `json:"name"`
			GPU  struct {
				GPUs []int `json:"gpus"`
			} `json:"gpu"`
		} `json:"endpoints"`
		GPU struct {
			Source string `json:"source"`
		} `json:"gpu"`
		GPUs []json.RawMessage `json:"gpus"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(rep.GPU.Source, "dcgm-exporter") || len(rep.GPUs) != 2 {
		t.Errorf("GPU section: %s, %d GPUs\n%.2000s", rep.GPU.Source, len(rep.GPUs), out)
	}
	for _, e := range rep.Endpoints {
		// One host serving two replicas: its GPUs are the node's, held
		// by neither (no pod says whose).
		if len(e.GPU.GPUs) != 0 {
			t.Errorf("%s joined to GPUs %v on a host it shares", e.Name, e.GPU.GPUs)
		}
	}
	// The host serving one replica: its GPUs are that replica's.
	code, out, errOut = runArgs(t, nil, "--once", "-o", "json", "--window", "2s", "--interval", "500ms", "--dcgm", dcgmURL, hosts[0])
	if code == int(3) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rep.Endpoints = nil
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Endpoints) != 1 || len(rep.Endpoints[0].GPU.GPUs) != 2 {
		t.Errorf("the host's one replica: %+v", rep.Endpoints)
	}
}

// A node's GPUs joined by host only (the replicas carry no pod label, the
// exporter's GPUs do): one GPU thermally throttled (another workload's,
// on the same node) and a thrashing replica. The GPU belongs to no replica,
// so its finding is the node's and no replica's cause: the thrashing
// replica's cause is KV thrashing, and the healthy replicas show nothing.
func TestDCGMHostJoinNodeLevel(t *testing.T) {
	f, err := sim.NewFleet(sim.FleetConfig{Replicas: []sim.ReplicaConfig{
		{Name: "thrash", Scenarios: []sim.ScenarioSpec{{Name: "kv-thrashing", Delay: 30 * time.Second}}},
		{Name: "ok-a", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
		{Name: "ok-b", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
		{Name: "hot", Scenarios: []sim.ScenarioSpec{{Name: "thermal-throttle"}}}, // not watched: its GPU is on the node
	}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	watched := f.Replicas()[:3]
	rd := dcgm.NewReader()
	norms := []*sources.Normalizer{sources.NewNormalizer(), sources.NewNormalizer(), sources.NewNormalizer()}
	holders := []dcgm.Holder{{Host: sim.DCGMNode}, {Host: sim.DCGMNode}, {Host: sim.DCGMNode}}
	var batches []sources.Batch
	for f.Elapsed() < 5*time.Minute {
		f.Advance(time.Second)
		b := sources.Batch{Now: f.Now()}
		for i, r := range watched {
			s := sources.Scrape{Target: r.Name(), Time: f.Now()}
			s.Data, s.Err = norms[i].Normalize(r.Exposition(sim.FormatText), sim.FormatText.ContentType())
			b.Scrapes = append(b.Scrapes, s)
		}
		rd.Begin()
		rd.ParseText(f.DCGMExposition(), "127.0.0.1")
		devs, ev := rd.End(f.Now())
		fl := dcgm.Fleet{Devices: devs, Events: ev}
		snap, held := fl.Snapshot(f.Now(), "dcgm-exporter", holders)
		b.GPU = &snap
		for i, r := range watched {
			b.Procs = append(b.Procs, sources.TargetProcs{Target: r.Name(), Tree: sources.ProcTree{GPUs: held[i]}})
		}
		batches = append(batches, b)
	}
	o, _, err := resolve([]string{"--gpu", "none", "127.0.0.1:1"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	o.targets = nil
	p, err := newPipelineOf(o, quiet(), replay(batches))
	if err != nil {
		t.Fatal(err)
	}
	fr := runToEnd(t, p)
	if len(fr.GPU.GPUs) != 4 {
		t.Fatalf("%d GPUs on the node, want 4 (every GPU of the replicas' host)", len(fr.GPU.GPUs))
	}
	gpuFinding := false
	for _, fd := range fr.Findings {
		t.Logf("%s %s on %q (cause %q): %s", fd.Severity, fd.Rule, fd.Target, fd.Cause, format.Say(fd.Summary))
		if fd.Rule == "gpu_throttling" {
			gpuFinding = true
			for _, r := range watched {
				if strings.Contains(fd.Target, r.Name()) {
					t.Errorf("the node's GPU finding names replica %s: %q", r.Name(), fd.Target)
				}
			}
		}
		if strings.HasPrefix(fd.Cause, "gpu_throttling") {
			t.Errorf("%s on %s follows the node's GPU: %q", fd.Rule, fd.Target, fd.Cause)
		}
	}
	if !gpuFinding {
		t.Error("no gpu_throttling on the node")
	}
	for _, e := range fr.Endpoints {
		if len(e.GPU.GPUs) != 0 {
			t.Errorf("%s holds GPUs %v on a host it shares", e.Name, e.GPU.GPUs)
		}
		switch e.Name {
		case "thrash":
			if len(e.Findings) == 0 || e.Findings[0].Rule != "kv_cache_thrashing" {
				t.Errorf("thrash's first finding: %+v", e.Findings)
			}
		default:
			for _, fd := range e.Findings {
				t.Errorf("healthy %s shows %s %s: %s", e.Name, fd.Severity, fd.Rule, format.Say(fd.Summary))
			}
		}
	}
}
