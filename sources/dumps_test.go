package sources

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// published returns a dump as the server sent it: fragments were published
// with "..." elisions and cut mid-line at the end (PROVENANCE.md), which
// are artifacts of publication, not of the exposition.
func published(t *testing.T, name string) []byte {
	t.Helper()
	return publishedIn(t, "dumps", name)
}

func publishedIn(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", dir, name))
	if err != nil {
		t.Fatal(err)
	}
	// A shell prompt line ("$ curl …/metrics") was pasted, not served.
	if bytes.HasPrefix(b, []byte("$ ")) {
		b = b[bytes.IndexByte(b, '\n')+1:]
	}
	if !strings.Contains(name, "_fragment") {
		return b
	}
	var keep [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !bytes.Contains(l, []byte("...")) {
			keep = append(keep, l)
		}
	}
	out := bytes.Join(keep, []byte("\n"))
	if _, err := NewNormalizer().Normalize(out, "text/plain; version=0.0.4"); err != nil {
		// The last line was cut mid-token: drop it.
		lines := bytes.Split(bytes.TrimRight(out, "\n"), []byte("\n"))
		out = append(bytes.Join(lines[:len(lines)-1], []byte("\n")), '\n')
	}
	return out
}

// canon renders a snapshot's canonical signals deterministically, for goldens.
func canon(s *Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kind %s\nversion %s\nsamples %d\n", s.Kind, s.Version, s.Samples)
	for _, w := range s.Warnings {
		fmt.Fprintf(&b, "warning %s\n", w)
	}
	for i, v := range s.Proc {
		if !math.IsNaN(v) {
			fmt.Fprintf(&b, "proc %s %g\n", FamilyName(RoleProc, uint8(i)), v)
		}
	}
	for _, h := range s.HTTP {
		fmt.Fprintf(&b, "http %s %g\n", h.Label, h.Value)
	}
	if s.Lora != nil {
		fmt.Fprintf(&b, "lora max=%d running=%v waiting=%v\n", s.Lora.MaxLora, s.Lora.Running, s.Lora.Waiting)
	}
	for _, sub := range s.Subs {
		fmt.Fprintf(&b, "sub model=%q engine=%q\n", sub.Key.Model, sub.Key.Engine)
		for i, v := range sub.Gauges {
			if !math.IsNaN(v) {
				fmt.Fprintf(&b, "  gauge %s %g\n", FamilyName(RoleGauge, uint8(i)), v)
			}
		}
		for i, v := range sub.Counters {
			if !math.IsNaN(v) {
				fmt.Fprintf(&b, "  counter %s %g created=%v\n", FamilyName(RoleCounter, uint8(i)), v, !math.IsNaN(sub.Created[i]))
			}
		}
		for i := range sub.Hists {
			h := &sub.Hists[i]
			if h.Present() {
				fmt.Fprintf(&b, "  hist %s buckets=%d count=%g sum=%g last_bound=%g created=%v\n", FamilyName(RoleHist, uint8(i)),
					len(h.Bounds), h.Count, h.Sum, lastFinite(h.Bounds), !math.IsNaN(h.Created))
			}
		}
		for i, list := range sub.Labeled {
			for _, lv := range list {
				fmt.Fprintf(&b, "  labeled %s{%s} %g\n", FamilyName(RoleLabeled, uint8(i)), lv.Label, lv.Value)
			}
		}
		if c := sub.Cache; c != nil {
			fmt.Fprintf(&b, "  cache block_size=%d num_gpu_blocks=%d capacity_tokens=%d gpu_mem_util=%g prefix_caching=%s labels=%d\n",
				c.BlockSize, c.NumGPUBlocks, c.CapacityTokens(), c.GPUMemUtil, c.PrefixCaching, len(c.Labels))
		}
	}
	return b.String()
}

func lastFinite(b []float64) float64 {
	for i := len(b) - 1; i >= 0; i-- {
		if !math.IsInf(b[i], 0) {
			return b[i]
		}
	}
	return math.NaN()
}

func dumpNames(t *testing.T) []string {
	t.Helper()
	return namesIn(t, "dumps")
}

func namesIn(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", dir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dumps: %v", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	return names
}

// TestDumpsParse: every real capture parses, and its canonical signals match
// the golden file (go test ./sources -run TestDumpsParse -update).
func TestDumpsParse(t *testing.T) { goldenParse(t, "dumps") }

// TestOtherEnginesParse: the real SGLang, Dynamo and TensorRT-LLM fragments
// (testdata/other-engines, PROVENANCE.md there) read as their goldens say:
// SGLang's families as the canonical signals of an SGLang server, its
// sglang_ spelling too; Dynamo's vLLM worker as vLLM; the others refused
// with the engine named.
func TestOtherEnginesParse(t *testing.T) { goldenParse(t, "other-engines") }

func goldenParse(t *testing.T, dir string) {
	for _, name := range namesIn(t, dir) {
		t.Run(name, func(t *testing.T) {
			body := publishedIn(t, dir, name)
			snap, err := NewNormalizer().Normalize(body, "text/plain; version=0.0.4; charset=utf-8")
			var got string
			if err != nil {
				got = "error " + err.Error() + "\n"
			} else {
				got = canon(snap)
			}
			golden := filepath.Join("..", "testdata", "golden", dir, strings.TrimSuffix(name, ".txt")+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("missing golden (run with -update): %v", err)
			}
			if got != string(want) {
				t.Errorf("canonical signals changed:\n--- got\n%s\n--- want\n%s", got, want)
			}
		})
	}
}

func mustNormalize(t *testing.T, body []byte) *Snapshot {
	t.Helper()
	s, err := NewNormalizer().Normalize(body, "text/plain; version=0.0.4")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDumpFacts pins the facts an operator reads off each full dump, by hand
// from the dump text, independently of the goldens.
func TestDumpFacts(t *testing.T) {
	v010 := mustNormalize(t, published(t, "armandossrecife-vllm-server-api-chat__v0.10.1-ngc25.09_full.txt"))
	if got := v010.Version.String(); got != "V1 0.9.2–0.10.1" {
		t.Errorf("v0.10.1 dump detected as %s", got)
	}
	if len(v010.Subs) != 1 {
		t.Fatalf("subs = %d", len(v010.Subs))
	}
	s := &v010.Subs[0]
	checks := []struct {
		name      string
		got, want float64
	}{
		// gpu_cache_usage_perc and kv_cache_usage_perc carry the same value;
		// the current name wins.
		{"kv usage", s.Gauges[GKVUsage], 0.0011764705882353343},
		{"running", s.Gauges[GRunning], 0},
		{"generation tokens", s.Counters[CGenTokens], 1739},
		{"prompt tokens", s.Counters[CPromptTokens], 246},
		{"prefix queries", s.Counters[CPrefixQueries], 246},
		{"prefix hits", s.Counters[CPrefixHits], 80},
		{"preemptions", s.Counters[CPreemptions], 0},
		{"ttft count", s.Hists[HTTFT].Count, 6},
		{"e2e count", s.Hists[HE2E].Count, 6},
		{"iteration tokens sum", s.Hists[HIterTokens].Sum, 1985},
		{"prefill sum", s.Hists[HPrefill].Sum, 0.2379713719992651},
		{"finished stop", s.LabeledValue(LFinished, "stop"), 6},
		{"finished abort", s.LabeledValue(LFinished, "abort"), 0},
		{"rss", v010.Proc[PRSS], 1.109622784e+09},
		{"start", v010.Proc[PStartTime], 1.77104238234e+09},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if math.IsNaN(s.Created[CGenTokens]) {
		t.Error("generation_tokens_created not read")
	}
	if s.Key != (SubKey{Model: "Qwen/Qwen3-4B-Instruct-2507-FP8", Engine: "0"}) {
		t.Errorf("key = %+v", s.Key)
	}
	if c := s.Cache; c == nil || c.BlockSize != 16 || c.NumGPUBlocks != 850 || c.CapacityTokens() != 13600 || c.GPUMemUtil != 0.9 || c.PrefixCaching != TriYes {
		t.Errorf("cache config = %+v", c)
	}
	// The ITL signal comes from time_per_output_token_seconds here (no
	// inter_token_latency_seconds before 0.10.2): the ≥0.8.4 layout, 19 bounds + Inf.
	if h := s.Hists[HITL]; len(h.Bounds) != 20 || h.Count != 1733 {
		t.Errorf("ITL from TPOT: bounds=%d count=%v", len(h.Bounds), h.Count)
	}

	v011 := mustNormalize(t, published(t, "Ahasannn-hardware-aware-router__v0.11.0_full.txt"))
	if got := v011.Version.String(); got != "V1 0.11" {
		t.Errorf("v0.11.0 dump detected as %s", got)
	}
	s = &v011.Subs[0]
	if s.Cache.NumGPUBlocks != 2452 || s.Cache.GPUMemUtil != 0.25 || !s.Hists[HTPOT].Present() {
		t.Errorf("v0.11.0 cache/TPOT: %+v %v", s.Cache, s.Hists[HTPOT].Present())
	}
	// Both ITL names are present in 0.11.0; the current one is used.
	if b := s.Hists[HITL].Bounds; len(b) != 20 {
		t.Errorf("ITL bounds %v", b)
	}

	pid := mustNormalize(t, published(t, "vllm-project-vllm-pr-28792__v0.11.x-api-server-count-gt1-pid-label_fragment.txt"))
	if got := pid.Subs[0].Gauges[GKVUsage]; got != 0.6530455880475035 {
		t.Errorf("per-pid KV usage merged to %v, want the live process's 0.653", got)
	}
	if len(pid.Warnings) != 0 {
		t.Errorf("pid copies reported as problems: %v", pid.Warnings)
	}

	neg := mustNormalize(t, published(t, "vllm-project-vllm-ascend-issue-10048__v0.20.2rc1-DP16-negative-kv-usage_fragment.txt"))
	if !math.IsNaN(neg.Subs[0].Gauges[GKVUsage]) || len(neg.Warnings) != 1 || !strings.Contains(neg.Warnings[0], "-0.3875") {
		t.Errorf("negative KV usage: %v %v", neg.Subs[0].Gauges[GKVUsage], neg.Warnings)
	}

	v0 := mustNormalize(t, published(t, "unknown-repo-b__V0-v0.6.x-Llama-3.1-8B_fragment.txt"))
	if v0.Version.Gen != GenV0 || v0.Subs[0].Key.Engine != "" || v0.Subs[0].Gauges[GPrefixHitRateGPU] != -1 {
		t.Errorf("V0 fragment: %s %+v", v0.Version, v0.Subs[0].Key)
	}

	noSamples := mustNormalize(t, published(t, "MeetKai-functionary-pr-263__V0-v0.5.4-0.6.x-multiproc-no-samples_fragment.txt"))
	if noSamples.Kind != KindNoSamples {
		t.Errorf("HELP/TYPE-only exposition: kind %s", noSamples.Kind)
	}
}
