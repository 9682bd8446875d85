package sim_test

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sim"
)

// exposed is what a /metrics text says about its families: the TYPE of
// each, the label names its samples carry, and the bucket bounds of
// histograms. Only vllm:* and process_* families count.
type exposed struct {
	help   map[string]string
	types  map[string]string
	labels map[string][]string // sorted label names, le excluded
	les    map[string][]string // bucket bounds as written
	cache  map[string]string   // cache_config_info label values
}

// parseExposition reads the text format tolerantly: the published dumps
// are sometimes cut mid-line, so an incomplete line is skipped, not an error.
func parseExposition(text string) exposed {
	e := exposed{help: map[string]string{}, types: map[string]string{}, labels: map[string][]string{},
		les: map[string][]string{}, cache: map[string]string{}}
	family := ""
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			if name, h, ok := strings.Cut(rest, " "); ok && relevant(name) {
				e.help[name] = h
			}
			continue
		}
		if strings.HasPrefix(line, "# TYPE ") {
			f := strings.Fields(line)
			if len(f) == 4 && slices.Contains([]string{"gauge", "counter", "histogram", "summary", "untyped"}, f[3]) {
				family = f[2]
				if relevant(family) {
					e.types[family] = f[3]
				}
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") || !relevant(family) {
			continue
		}
		name, labels, ok := parseSample(line)
		if !ok || !strings.HasPrefix(name, strings.TrimSuffix(family, "_total")) {
			continue
		}
		if strings.HasSuffix(name, "cache_config_info") {
			for k, v := range labels {
				e.cache[k] = v
			}
		}
		var names []string
		for k, v := range labels {
			if k == "le" {
				if !slices.Contains(e.les[family], v) {
					e.les[family] = append(e.les[family], v)
				}
				continue
			}
			names = append(names, k)
		}
		sort.Strings(names)
		if old, seen := e.labels[family]; seen && !slices.Equal(old, names) {
			e.labels[family] = append(old, "MIXED:"+strings.Join(names, ","))
		} else {
			e.labels[family] = names
		}
	}
	return e
}

func relevant(family string) bool {
	return strings.HasPrefix(family, "vllm:") || strings.HasPrefix(family, "process_")
}

// parseSample splits `name{k="v",…} value`; ok is false for a cut line.
func parseSample(line string) (string, map[string]string, bool) {
	labels := map[string]string{}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return "", nil, false
	}
	name, rest := line[:i], line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.Index(rest, `="`)
			if eq < 0 {
				return "", nil, false
			}
			key := rest[:eq]
			rest = rest[eq+2:]
			var val strings.Builder
			closed := false
			for j := 0; j < len(rest); j++ {
				switch c := rest[j]; {
				case c == '\\' && j+1 < len(rest):
					val.WriteByte(rest[j+1])
					j++
				case c == '"':
					rest, closed = rest[j+1:], true
				default:
					val.WriteByte(c)
				}
				if closed {
					break
				}
			}
			if !closed {
				return "", nil, false
			}
			labels[key] = val.String()
			rest = strings.TrimPrefix(rest, ",")
		}
	}
	if len(strings.Fields(rest)) == 0 {
		return "", nil, false
	}
	return name, labels, true
}

func readDump(t *testing.T, name string) exposed {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "dumps", name))
	if err != nil {
		t.Fatal(err)
	}
	return parseExposition(string(b))
}

// simulate serves a replica of profile p for a while and parses its text.
func simulate(t *testing.T, rc sim.ReplicaConfig) exposed {
	t.Helper()
	f, err := sim.NewFleet(one(rc), 1)
	if err != nil {
		t.Fatal(err)
	}
	f.Advance(90 * time.Second)
	return parseExposition(string(f.Replicas()[0].Exposition(sim.FormatText)))
}

func withMaxModelLen(n int) sim.Model {
	m := sim.Models[0]
	m.MaxModelLen = n
	return m
}

// The two full captures: the simulator must expose exactly their vllm:* and
// process_* families, with the same help, types, label names and buckets. The
// 1-2-5 buckets follow max_model_len, so each run uses one that
// reproduces the capture's.
func TestExpositionMatchesFullDumps(t *testing.T) {
	for _, c := range []struct {
		profile, dump string
		maxModelLen   int
	}{
		{"v0.10", "armandossrecife-vllm-server-api-chat__v0.10.1-ngc25.09_full.txt", 8192},
		{"v0.11", "Ahasannn-hardware-aware-router__v0.11.0_full.txt", 32768},
	} {
		t.Run(c.profile, func(t *testing.T) {
			want := readDump(t, c.dump)
			got := simulate(t, sim.ReplicaConfig{Profile: c.profile, Model: withMaxModelLen(c.maxModelLen)})
			if len(want.types) < 40 || len(want.les) < 12 {
				t.Fatalf("dump parse found only %d families, %d histograms", len(want.types), len(want.les))
			}
			for fam, typ := range want.types {
				if got.types[fam] != typ {
					t.Errorf("%s: type %q, dump has %q", fam, got.types[fam], typ)
				}
			}
			for fam := range got.types {
				if _, ok := want.types[fam]; !ok {
					t.Errorf("%s: not in the dump", fam)
				}
			}
			for fam, names := range want.labels {
				if !slices.Equal(got.labels[fam], names) {
					t.Errorf("%s: labels %v, dump has %v", fam, got.labels[fam], names)
				}
			}
			for fam, h := range want.help {
				if got.help[fam] != h {
					t.Errorf("%s: help %q, dump has %q", fam, got.help[fam], h)
				}
			}
			for fam, les := range want.les {
				if !slices.Equal(got.les[fam], les) {
					t.Errorf("%s: buckets %v, dump has %v", fam, got.les[fam], les)
				}
			}
			// cache_config_info values as vLLM writes them (str() of each
			// field), except what depends on the deployment.
			for k, v := range want.cache {
				switch k {
				case "num_gpu_blocks", "gpu_memory_utilization":
					continue
				}
				if got.cache[k] != v {
					t.Errorf("cache_config_info %s=%q, dump has %q", k, got.cache[k], v)
				}
			}
		})
	}
}

// V0 captures are fragments: every family they show must be in the
// simulator's v0.6 output with the same type and labels. cache_config_info
// gained fields over 0.5.5–0.6.x, so the fragments' label sets must be
// subsets of ours, and the 0.6.2+ one equal.
func TestExpositionCoversV0Fragments(t *testing.T) {
	got := simulate(t, sim.ReplicaConfig{Profile: "v0.6"})
	for _, c := range []struct {
		dump       string
		exactCache bool
	}{
		{"oracle-quickstart-oci-ai-blueprints__V0-v0.6.x_fragment.txt", true},
		{"QwenLM-Qwen3-VL-issue-55__V0-v0.6.x_fragment.txt", false},
		{"unknown-repo-b__V0-v0.6.x-Llama-3.1-8B_fragment.txt", false},
		{"MeetKai-functionary-pr-263__V0-v0.5.4-0.6.x-multiproc-no-samples_fragment.txt", false},
		{"vllm-project-vllm-issue-8819__V0-v0.6.x-best_of_fragment.txt", false},
	} {
		t.Run(c.dump, func(t *testing.T) {
			want := readDump(t, c.dump)
			if len(want.types) == 0 {
				t.Fatal("nothing parsed from the fragment")
			}
			for fam, typ := range want.types {
				if strings.Contains(fam, "best_of") {
					continue // removed in 0.6.3; the simulator is 0.6.6
				}
				if got.types[fam] != typ {
					t.Errorf("%s: type %q, fragment has %q", fam, got.types[fam], typ)
				}
			}
			for fam, h := range want.help {
				if !strings.Contains(fam, "best_of") && len(h) > 0 && !strings.HasPrefix(got.help[fam], h) {
					t.Errorf("%s: help %q, fragment has %q", fam, got.help[fam], h)
				}
			}
			if c.exactCache {
				for k, v := range want.cache {
					if k != "num_gpu_blocks" && k != "num_cpu_blocks" && got.cache[k] != v {
						t.Errorf("cache_config_info %s=%q, fragment has %q", k, got.cache[k], v)
					}
				}
			}
			for fam, names := range want.labels {
				if strings.Contains(fam, "best_of") {
					continue
				}
				g := got.labels[fam]
				switch {
				case strings.HasSuffix(fam, "cache_config_info") && !c.exactCache:
					for _, n := range names {
						if !slices.Contains(g, n) {
							t.Errorf("%s: label %s missing (have %v)", fam, n, g)
						}
					}
				case !slices.Equal(g, names):
					t.Errorf("%s: labels %v, fragment has %v", fam, g, names)
				}
			}
		})
	}
	// V0 0.5.5+ serves the multiprocess registry: no process collector, no
	// _created series, no engine label.
	for fam, names := range got.labels {
		if strings.HasPrefix(fam, "process_") || strings.HasSuffix(fam, "_created") || slices.Contains(names, "engine") {
			t.Errorf("v0.6 exposes %s %v", fam, names)
		}
	}
}
