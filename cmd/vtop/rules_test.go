package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/vtop-dev/vtop/diagnose/detect"
	"github.com/vtop-dev/vtop/sources"
)

var update = flag.Bool("update", false, "rewrite docs/rules.md")

// TestRulesDoc keeps docs/rules.md in step with the rule table.
func TestRulesDoc(t *testing.T) {
	code, out, errOut := runArgs(t, nil, "rules", "--format", "markdown")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	path := filepath.Join("..", "..", "docs", "rules.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The verdict table between the markers is diagnose/detect's
	// TestVerdictScenarios' output: kept as it is.
	doc, table := splitVerdictTable(string(b))
	if *update {
		full, _ := splitVerdictTable(out)
		full = strings.Replace(full, verdictEnd, table+verdictEnd, 1)
		if err := os.WriteFile(path, []byte(full), 0o644); err != nil {
			t.Fatal(err)
		}
		doc = out
	}
	if doc != out {
		t.Errorf("docs/rules.md is out of date: go test ./cmd/vtop -run TestRulesDoc -update")
	}
	for _, id := range detect.RuleIDs() {
		if !strings.Contains(out, "### "+id+"\n") {
			t.Errorf("docs lack %s", id)
		}
	}
}

const (
	verdictBegin = "<!-- verdict-table:begin -->\n"
	verdictEnd   = "<!-- verdict-table:end -->\n"
)

// splitVerdictTable returns the document with the verdict table emptied,
// and the table.
func splitVerdictTable(doc string) (rest, table string) {
	i, j := strings.Index(doc, verdictBegin), strings.Index(doc, verdictEnd)
	if i < 0 || j < i {
		return doc, ""
	}
	return doc[:i+len(verdictBegin)] + doc[j:], doc[i+len(verdictBegin) : j]
}

func writeConfig(t *testing.T, body string) func(string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return func(k string) string {
		if k == "VTOP_CONFIG" {
			return p
		}
		return ""
	}
}

// `vtop rules` prints every rule with its active thresholds; the config
// file moves them and disables rules.
func TestRulesText(t *testing.T) {
	code, out, _ := runArgs(t, nil, "rules")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"kv_cache_thrashing — KV cache thrashing  [engine; for 2m, resolves after 2m]",
		"KV usage ≥ 90%, preemptions ≥ 0.05/s and ≥ 5% of finished requests", "SLO profile chat (interactive chat): TTFT 500ms, inter-token 50ms, E2E 10s",
		"endpoint_down", "replica_imbalance", "settings  kv_high 90%"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q", want)
		}
	}
	getenv := writeConfig(t, "slo: code\nslo_profiles:\n  code: {ttft: 150ms}\nrules:\n  kv_cache_thrashing: {kv_high: 0.92, for: 3m, resolve_for: 0}\n  memory_leak: {disabled: true}\n  queue_backlog: {queue_p95: 10s, critical: 45}\n")
	code, out, errOut := runArgs(t, getenv, "rules")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"[engine; for 3m, resolves at once]", "KV usage ≥ 92%", "kv_high 92% (default 90%)",
		"memory_leak — Memory leak  [endpoint; for 10m, resolves after 10m]  DISABLED", "SLO profile code (code completion): TTFT 150ms",
		"queue time p95 ≥ 10s", "critical at queue time p95 ≥ 45s"} {
		if !strings.Contains(out, want) {
			t.Errorf("with config: lacks %q\n", want)
		}
	}
}

func TestRulesConfigErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"rules:\n  kv_thrashing: {for: 1m}\n", `line 2: rules: unknown rule "kv_thrashing"`},
		{"rules:\n  preemption:\n    rat: 1\n", "line 3: rules: preemption: rat: unknown setting (have for, resolve_for, disabled, min_rate, share, critical, share_clear, headroom)"},
		{"rules:\n  preemption: {share: fast}\n", "share must be a non-negative number"},
		{"rules:\n  preemption: {for: soon}\n", "must be a duration"},
		{"rules:\n  queue_backlog: {queue_p95: soon}\n", "queue_p95 must be a duration like 30s (or seconds)"},
		{"rules:\n  preemption: {disabled: maybe}\n", "must be true or false"},
		{"rules: [a]\n", "rules must map rule ids"},
		{"slo_profiles:\n  voice: {ttft: 300ms}\n", "voice is a new profile: give ttft, itl and e2e"},
		{"slo_profiles:\n  chat: {tfft: 300ms}\n", "unknown setting (have desc, ttft, itl, e2e)"},
		{"slo: voice\n", `--slo: unknown SLO profile "voice"`},
	} {
		getenv := writeConfig(t, c.body)
		code, _, errOut := runArgs(t, getenv, "--once", "localhost:1")
		if code != 3 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, %q, want %q", c.body, code, errOut, c.want)
		}
		code, _, errOut = runArgs(t, getenv, "rules")
		if code != 3 || !strings.Contains(errOut, c.want) {
			t.Errorf("rules %q: exit %d, %q, want %q", c.body, code, errOut, c.want)
		}
	}
	// A new profile with every target is accepted and selectable.
	getenv := writeConfig(t, "slo: voice\nslo_profiles:\n  voice: {desc: voice assistant, ttft: 300ms, itl: 40ms, e2e: 5s}\n")
	o, _, err := resolve([]string{"localhost:1"}, getenv)
	if err != nil || o.rules.SLO.Name != "voice" || o.rules.SLO.ITL.Milliseconds() != 40 || len(o.rules.Profiles) != 6 {
		t.Errorf("custom profile: %v %+v", err, o)
	}
}

// The Prometheus rules pass promtool's checks, name only vLLM metrics from
// the one table (every alias of a signal, joined with or), and fire on
// synthetic series of a V1 and a V0 engine (promtool test rules).
func TestRulesPrometheus(t *testing.T) {
	code, out, errOut := runArgs(t, nil, "rules", "--format", "prometheus")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, names := range [][]string{
		sources.FamilyNames(sources.RoleGauge, uint8(sources.GKVUsage)),
		sources.FamilyNames(sources.RoleHist, uint8(sources.HITL)),
		sources.FamilyNames(sources.RoleCounter, uint8(sources.CPrefixHits)),
	} {
		if len(names) < 2 {
			t.Fatalf("expected aliases: %v", names)
		}
		for _, n := range names {
			if !strings.Contains(out, n) {
				t.Errorf("rules lack alias %s", n)
			}
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (.ci/run installs the Debian prometheus package)")
	}
	dir := t.TempDir()
	rules := filepath.Join(dir, "vtop-rules.yml")
	if err := os.WriteFile(rules, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, b)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal([]byte(out), &file); err != nil {
		t.Fatal(err)
	}
	ann := map[string]map[string]string{}
	for _, r := range file.Groups[0].Rules {
		ann[r.Alert] = r.Annotations
	}
	// 20 preemptions/s, 2 finished requests/s, KV 97%, TTFT p95 4.75 s:
	// thrashing on both generations' names; V0 also swaps.
	series := func(kvName, labels string, extra ...string) string {
		s := []string{
			fmt.Sprintf(`      - series: '%s{%s}'`+"\n        values: '0.97x40'", kvName, labels),
			fmt.Sprintf(`      - series: 'vllm:num_preemptions_total{%s}'`+"\n        values: '0+300x40'", labels),
			// 2 requests finish per second: 10 preemptions per request.
			fmt.Sprintf(`      - series: 'vllm:request_success_total{%s,finished_reason="stop"}'`+"\n        values: '0+30x40'", labels),
		}
		for _, le := range []struct{ le, v string }{{"0.5", "1"}, {"5", "10"}, {"+Inf", "10"}} {
			s = append(s, fmt.Sprintf(`      - series: 'vllm:time_to_first_token_seconds_bucket{%s,le="%s"}'`+"\n        values: '0+%sx40'", labels, le.le, le.v))
		}
		return strings.Join(append(s, extra...), "\n")
	}
	expect := func(alert, labels string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "      - eval_time: 5m\n        alertname: %s\n        exp_alerts:\n          - exp_labels: {%s}\n            exp_annotations:\n", alert, labels)
		for k, v := range ann[alert] {
			fmt.Fprintf(&b, "              %s: %q\n", k, v)
		}
		return b.String()
	}
	v1 := `job="vllm",instance="a:8000",model_name="m",engine="0"`
	v0 := `job="vllm",instance="b:8000",model_name="m"`
	test := "rule_files: [vtop-rules.yml]\nevaluation_interval: 15s\ntests:\n" +
		"  - interval: 15s\n    input_series:\n" + series("vllm:kv_cache_usage_perc", v1) + "\n    alert_rule_test:\n" +
		expect("VtopKVCacheThrashing", `severity: warning, vtop_rule: kv_cache_thrashing, job: vllm, instance: "a:8000", model_name: m, engine: "0"`) +
		expect("VtopKVCacheThrashingCritical", `severity: critical, vtop_rule: kv_cache_thrashing, job: vllm, instance: "a:8000", model_name: m, engine: "0"`) +
		"  - interval: 15s\n    input_series:\n" + series("vllm:gpu_cache_usage_perc", v0,
		`      - series: 'vllm:num_requests_swapped{`+v0+`}'`+"\n        values: '3x40'") + "\n    alert_rule_test:\n" +
		expect("VtopKVCacheThrashing", `severity: warning, vtop_rule: kv_cache_thrashing, job: vllm, instance: "b:8000", model_name: m`) +
		expect("VtopSwapping", `severity: critical, vtop_rule: swapping, job: vllm, instance: "b:8000", model_name: m`)
	// The API server answers 10 of every 30 inference requests 4xx (33
	// %: warning and critical); /metrics' scrapes do not count, nor does
	// a FastAPI app that is not vLLM with the same counts.
	httpSeries := func(labels string) string {
		return fmt.Sprintf(`      - series: 'http_requests_total{%s,handler="/v1/chat/completions",method="POST",status="2xx"}'`+"\n        values: '0+20x40'\n", labels) +
			fmt.Sprintf(`      - series: 'http_requests_total{%s,handler="/v1/chat/completions",method="POST",status="4xx"}'`+"\n        values: '0+10x40'\n", labels) +
			fmt.Sprintf(`      - series: 'http_requests_total{%s,handler="/metrics",method="GET",status="2xx"}'`+"\n        values: '0+100x40'", labels)
	}
	vllmHTTP, app := `job="vllm",instance="c:8000"`, `job="app",instance="d:8000"`
	test += "  - interval: 15s\n    input_series:\n" + httpSeries(vllmHTTP) + "\n" + httpSeries(app) + "\n" +
		`      - series: 'vllm:num_requests_running{` + vllmHTTP + `,model_name="m",engine="0"}'` + "\n        values: '1x40'\n    alert_rule_test:\n" +
		expect("VtopHttpRejections", `severity: warning, vtop_rule: http_rejections, job: vllm, instance: "c:8000"`) +
		expect("VtopHttpRejectionsCritical", `severity: critical, vtop_rule: http_rejections, job: vllm, instance: "c:8000"`)
	// Long answers: E2E p95 ≈ 29 s (chat target 10 s) while TTFT and
	// inter-token latency are well within theirs: the info alert only,
	// neither the warning nor the critical one, as the detector says it.
	long := `job="vllm",instance="e:8000",model_name="m"`
	hist := func(name string, les ...[2]string) string {
		var out []string
		for _, le := range les {
			out = append(out, fmt.Sprintf(`      - series: '%s_bucket{%s,le="%s"}'`+"\n        values: '0+%sx60'", name, long, le[0], le[1]))
		}
		return strings.Join(out, "\n")
	}
	longAt := func(alert, sev string) string {
		if sev == "" {
			return "      - eval_time: 10m\n        alertname: " + alert + "\n        exp_alerts: []\n"
		}
		return strings.Replace(expect(alert, `severity: `+sev+`, vtop_rule: slo_breach, job: vllm, instance: "e:8000", model_name: m`), "eval_time: 5m", "eval_time: 10m", 1)
	}
	test += "  - interval: 15s\n    input_series:\n" +
		hist("vllm:e2e_request_latency_seconds", [2]string{"10", "0"}, [2]string{"30", "30"}, [2]string{"+Inf", "30"}) + "\n" +
		hist("vllm:time_to_first_token_seconds", [2]string{"0.1", "30"}, [2]string{"+Inf", "30"}) + "\n" +
		hist("vllm:inter_token_latency_seconds", [2]string{"0.025", "3000"}, [2]string{"+Inf", "3000"}) + "\n    alert_rule_test:\n" +
		longAt("VtopSLOBreachInfo", "info") + longAt("VtopSLOBreach", "") + longAt("VtopSLOBreachCritical", "")
	testFile := filepath.Join(dir, "test.yml")
	if err := os.WriteFile(testFile, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool, "test", "rules", "test.yml")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s\n%s", err, b, test)
	}
}
