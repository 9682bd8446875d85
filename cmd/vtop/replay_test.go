package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/app"
	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/diagnose/detect"
	"github.com/vtop-dev/vtop/sim"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/ui/format"
	"github.com/vtop-dev/vtop/ui/report"
)

// A live --once run recorded, then replayed: the same report, byte for
// byte (the same bodies parsed, the same GPU readings, the detector
// evaluated at the same instants).
func TestReplayMatchesLiveOnce(t *testing.T) {
	thrash := thrashServer(t)
	fleet, err := sim.NewFleet(sim.FleetConfig{Replicas: []sim.ReplicaConfig{
		{Name: "r0", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
		{Name: "r1", Profile: "v0.6", Scenarios: []sim.ScenarioSpec{{Name: "swapping"}}}}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	fleet.Advance(30 * time.Second)
	srv, err := sim.Serve(fleet, sim.ServeConfig{Host: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	targets := append([]string{thrash}, srv.URLs()...)
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "live.vtop")
			args := append([]string{"--once", "-o", format, "-w", "1500ms", "-i", "100ms", "--gpu", "none", "--record", path}, targets...)
			code, live, errOut := runArgs(t, nil, args...)
			if code != int(report.Critical) || errOut != "" {
				t.Fatalf("live run: exit %d, stderr %q\n%s", code, errOut, live)
			}
			rcode, replayed, rerr := runArgs(t, nil, "replay", "--once", "-o", format, path)
			if rerr != "" || rcode != code {
				t.Fatalf("replay: exit %d (live %d), stderr %q", rcode, code, rerr)
			}
			if replayed != live {
				t.Fatalf("replay differs from the live report:\n--- live\n%s\n--- replay\n%s", live, replayed)
			}
			if !strings.Contains(live, "kv_cache_thrashing") {
				t.Fatalf("the live run found no thrashing: the comparison proves little\n%s", live)
			}
		})
	}
}

// simRun drives the real pipeline (batches applied, then an evaluation,
// with --record) from an in-process simulated fleet on the simulated
// clock: per simulated second one batch with a scrape of each replica and
// a GPU reading. each sees every live frame. Rules' for durations are
// capped at simFor (as --once caps them, and recorded so), so an incident
// fires within a recording small enough for testdata.
const simFor = 20 * time.Second

func simRun(t testing.TB, path string, rcs []sim.ReplicaConfig, steps int, each func(*diagnose.Frame)) {
	t.Helper()
	simRunTrees(t, path, rcs, steps, nil, each)
}

// simRunTrees is simRun with each replica's process tree passed through
// tree first (to give it a memory limit, say); tree may be nil.
func simRunTrees(t testing.TB, path string, rcs []sim.ReplicaConfig, steps int, tree func(*sources.ProcTree), each func(*diagnose.Frame)) {
	t.Helper()
	simRunRules(t, path, rcs, steps, tree, nil, each)
}

// simRunRules is simRunTrees with the rules' configuration passed through
// rules first (a crafted profile, say); rules may be nil.
func simRunRules(t testing.TB, path string, rcs []sim.ReplicaConfig, steps int, tree func(*sources.ProcTree), rules func(*detect.RulesConfig), each func(*diagnose.Frame)) {
	t.Helper()
	fleet, err := sim.NewFleet(sim.FleetConfig{Replicas: rcs}, 7)
	if err != nil {
		t.Fatal(err)
	}
	o := &options{interval: time.Second, window: time.Minute, record: path}
	if o.rules, err = rulesConfig(&fileConfig{}, "chat"); err != nil {
		t.Fatal(err)
	}
	if rules != nil {
		rules(&o.rules)
	}
	var norms []*sources.Normalizer
	var procs []sources.TargetProcs
	for i, r := range fleet.Replicas() {
		tg, err := sources.ParseTarget(fmt.Sprintf("127.0.0.1:%d", 9+i)) // never polled
		if err != nil {
			t.Fatal(err)
		}
		tg.Name, tg.MaxNumSeqs = r.Name(), r.Config().MaxNumSeqs
		o.targets = append(o.targets, tg)
		api, engines := r.PIDs()
		pt := sources.ProcTree{Root: api, RootName: "vllm (simulated)", PIDs: append([]int{api}, engines...)}
		if tree != nil {
			tree(&pt)
		}
		procs = append(procs, sources.TargetProcs{Target: r.Name(), Tree: pt})
		norms = append(norms, sources.NewNormalizer())
	}
	p, err := newPipelineOf(o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	p.SetForCap(simFor)
	if err := p.StartRecording(o.appConfig(), simFor); err != nil {
		t.Fatal(err)
	}
	ct := sim.FormatOpenMetrics.ContentType()
	for k := 0; k < steps; k++ {
		fleet.Advance(time.Second)
		b := sources.Batch{Now: fleet.Now()}
		if k == 0 {
			b.Procs = procs
		}
		for i, r := range fleet.Replicas() {
			s := sources.Scrape{Target: r.Name(), Time: r.Now(), Duration: time.Millisecond}
			if !r.Reachable() {
				s.Err = errors.New("connection refused (is vLLM running on this port?)")
			} else {
				body := r.Exposition(sim.FormatOpenMetrics)
				if s.Data, s.Err = norms[i].Normalize(body, ct); s.Err != nil {
					s.Data = nil
				} else {
					s.KeepBody(norms[i], body, ct) // what the poller keeps for --record
				}
			}
			b.Scrapes = append(b.Scrapes, s)
		}
		g := fleet.GPUs().Sample(context.Background())
		b.GPU = &g
		p.Apply(&b)
		each(p.Frame())
	}
	if err := p.CloseRecording(); err != nil {
		t.Fatal(err)
	}
}

// evaluationLine is when a frame was evaluated and what its findings say.
func evaluationLine(fr *diagnose.Frame) string {
	return fr.Time.UTC().Format(time.RFC3339Nano) + "\n" + strings.Join(findingLines(fr), "\n")
}

// replaySays replays path and checks that say, at every evaluation, gives
// what it gave live (live[k] for the k-th), as often as live.
func replaySays(t *testing.T, path string, live []string, say func(*diagnose.Frame) string) {
	t.Helper()
	p, err := app.OpenPlayer([]string{path}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	k := 0
	for p.Next() {
		if k >= len(live) {
			t.Fatalf("replay evaluates more often (%d) than the live run (%d)", k+1, len(live))
		}
		if got := say(p.Frame()); got != live[k] {
			t.Fatalf("evaluation %d: replay\n%s\nlive\n%s", k, got, live[k])
		}
		k++
	}
	if p.Stopped() != nil || k != len(live) {
		t.Fatalf("replay stopped after %d of %d evaluations: %v", k, len(live), p.Stopped())
	}
}

// findingLines is what a frame's findings say, one line each, in order.
func findingLines(fr *diagnose.Frame) []string {
	var out []string
	for _, f := range fr.Findings {
		out = append(out, fmt.Sprintf("%s %s %s/%s/%s since %s: %s → %s", f.Severity, f.Rule, f.Target, f.Model, f.Engine,
			f.FirstSeen.UTC().Format("15:04:05.000"), format.Say(f.Summary), format.Say(f.Action)))
	}
	return out
}

func frameJSON(t testing.TB, fr *diagnose.Frame) string {
	var b bytes.Buffer
	if err := report.WriteJSON(&b, report.BuildJSONRun(fr, vtopVersion(), report.FrameStatus(fr), report.Run{Window: fr.Window, Elapsed: fr.Window})); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Recorded on the simulator's clock through an incident, the replay gives
// the same findings at every evaluation, and `replay --once --at T` prints
// the report the live run had at T.
func TestReplaySameFindingsAtSameTimes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim.vtop")
	rcs := []sim.ReplicaConfig{
		{Name: "replica-0", Scenarios: []sim.ScenarioSpec{{Name: "healthy"}}},
		{Name: "replica-1", Scenarios: []sim.ScenarioSpec{{Name: "kv-thrashing", Delay: 20 * time.Second}}},
		{Name: "replica-2", Scenarios: []sim.ScenarioSpec{{Name: "thermal-throttle", Delay: 10 * time.Second}}},
	}
	var live []string
	var times []time.Time
	var fired time.Time
	jsonAt := map[int]string{}
	simRun(t, path, rcs, 100, func(fr *diagnose.Frame) {
		k := len(live)
		live = append(live, evaluationLine(fr))
		times = append(times, fr.Time)
		if fired.IsZero() && len(fr.Findings) > 0 {
			fired = fr.Time
		}
		if k == 50 || k == 99 {
			jsonAt[k] = frameJSON(t, fr)
		}
	})
	if fired.IsZero() {
		t.Fatal("no finding fired live: the comparison proves little")
	}
	replaySays(t, path, live, evaluationLine)
	for k, want := range jsonAt {
		code, got, errOut := runArgs(t, nil, "replay", "--once", "-o", "json", "--at", times[k].Format(time.RFC3339Nano), path)
		if errOut != "" || got != want {
			t.Fatalf("--at %v: exit %d, stderr %q\n--- replay\n%s\n--- live\n%s", times[k], code, errOut, got, want)
		}
	}
	t.Logf("first finding at %v; %d evaluations equal", fired.Sub(times[0]), len(live))
}

// A vtop killed with SIGKILL while recording leaves a file that replays up
// to its last whole frame and says where it stopped.
func TestReplayAfterSIGKILL(t *testing.T) {
	bin := vtopBinary(t)
	addr := thrashServer(t)
	path := filepath.Join(t.TempDir(), "killed.vtop")
	cmd := exec.Command(bin, "--once", "-w", "10m", "-i", "100ms", "--gpu", "none", "--record", path, addr)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck // already dead when the test passes
	// Wait (without a deadline: the test's own timeout bounds it) until a
	// good part has been written, then kill it mid-recording.
	for {
		st, err := os.Stat(path)
		if err == nil && st.Size() > 8<<10 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() //nolint:errcheck // killed
	code, out, errOut := runArgs(t, nil, "replay", "--once", path)
	if !strings.Contains(errOut, "stopped at byte") || !strings.Contains(out, "vtop report") {
		t.Fatalf("exit %d\nstderr %s\n%s", code, errOut, out)
	}
	if !strings.Contains(out, addr+"  [UP") {
		t.Errorf("exit %d: the endpoint recorded before the kill is not in the report:\n%s", code, out)
	}
	t.Logf("%s", strings.TrimSpace(errOut))
}

// The simulator's scenarios, recorded in testdata/replay, replayed: the
// findings each evaluation shows are pinned in a golden file, so a change to
// a rule shows as a diff here. `go test ./cmd/vtop -run TestReplayGoldens
// -update` re-records them (then read the diff).
func TestReplayGoldens(t *testing.T) {
	cases := []struct {
		name  string
		rcs   []sim.ReplicaConfig
		steps int
	}{
		{"kv-thrashing", []sim.ReplicaConfig{{Name: "replica-3", Scenarios: []sim.ScenarioSpec{{Name: "kv-thrashing", Delay: 20 * time.Second}}}}, 90},
		{"gpu-underutilization", []sim.ReplicaConfig{{Name: "replica-3", Scenarios: []sim.ScenarioSpec{{Name: "gpu-underutilization", Delay: 20 * time.Second}}}}, 90},
		{"flapping", []sim.ReplicaConfig{{Name: "replica-3", Scenarios: []sim.ScenarioSpec{{Name: "flapping", Delay: 20 * time.Second}}}}, 90},
		{"swapping-v0.6", []sim.ReplicaConfig{{Name: "replica-3", Profile: "v0.6", Scenarios: []sim.ScenarioSpec{{Name: "swapping", Delay: 20 * time.Second}}}}, 90},
	}
	dir := filepath.Join("testdata", "replay")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := filepath.Join(dir, c.name+".vtop")
			golden := filepath.Join(dir, c.name+".findings")
			// -update writes the findings; a recording is made again only
			// when removed (--record never overwrites a file).
			if _, err := os.Stat(rec); *update && err != nil {
				os.MkdirAll(dir, 0o755)
				simRun(t, rec, c.rcs, c.steps, func(*diagnose.Frame) {})
			}
			got := transitions(t, rec)
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("findings of %s changed (run with -update and read the diff):\n--- got\n%s--- want\n%s", rec, got, want)
			}
		})
	}
}

// transitions replays a recording and lists when each finding appeared,
// changed severity or cleared, as offsets from the first evaluation.
func transitions(t *testing.T, path string) string {
	p, err := app.OpenPlayer([]string{path}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var b strings.Builder
	prev := map[string]string{}
	var start time.Time
	for p.Next() {
		if start.IsZero() {
			start = p.Frame().Time
		}
		at := p.Frame().Time.Sub(start).Round(time.Millisecond)
		cur := map[string]string{}
		for _, f := range p.Frame().Findings {
			key := f.Rule + " " + f.Target + "/" + f.Model + "/" + f.Engine
			cur[key] = f.Severity.String()
			if prev[key] != cur[key] {
				fmt.Fprintf(&b, "+%v %s %s: %s → %s\n", at, cur[key], key, format.Say(f.Summary), format.Say(f.Action))
			}
		}
		var gone []string
		for key := range prev {
			if _, ok := cur[key]; !ok {
				gone = append(gone, key)
			}
		}
		sort.Strings(gone)
		for _, key := range gone {
			fmt.Fprintf(&b, "+%v cleared %s\n", at, key)
		}
		prev = cur
	}
	if p.Stopped() != nil {
		t.Fatalf("%s: %v", path, p.Stopped())
	}
	fmt.Fprintf(&b, "%d evaluations\n", p.Evaluations())
	return b.String()
}

// vtop replay takes what it shares with a live run as the main command
// does: flags over VTOP_* over the config file.
func TestReplaySettingsPrecedence(t *testing.T) {
	rec, err := filepath.Glob(filepath.Join("testdata", "replay", "*.vtop"))
	if err != nil || len(rec) == 0 {
		t.Fatalf("no recording in testdata/replay: %v", err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("output: json\ninterval: 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(extra map[string]string) func(string) string {
		return func(k string) string {
			if k == "VTOP_CONFIG" {
				return cfg
			}
			return extra[k]
		}
	}
	isJSON := func(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "{") }
	_, out, errOut := runArgs(t, env(nil), "replay", "--once", rec[0])
	if !isJSON(out) {
		t.Errorf("output: json in the config file: not JSON (stderr %q):\n%.200s", errOut, out)
	}
	_, out, _ = runArgs(t, env(map[string]string{"VTOP_OUTPUT": "text"}), "replay", "--once", rec[0])
	if isJSON(out) {
		t.Errorf("VTOP_OUTPUT=text over the file: JSON")
	}
	_, out, _ = runArgs(t, env(map[string]string{"VTOP_OUTPUT": "text"}), "replay", "--once", "-o", "json", rec[0])
	if !isJSON(out) {
		t.Errorf("-o json over VTOP_OUTPUT: not JSON")
	}
	code, _, errOut := runArgs(t, env(map[string]string{"VTOP_THEME": "neon"}), "replay", "--once", rec[0])
	if code != int(report.Unknown) || !strings.Contains(errOut, "VTOP_THEME") && !strings.Contains(errOut, "--theme") {
		t.Errorf("VTOP_THEME=neon: exit %d, stderr %q", code, errOut)
	}
}
