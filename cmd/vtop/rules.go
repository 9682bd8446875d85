package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/diagnose/detect"
	"github.com/vtop-dev/vtop/sources"
	spell "github.com/vtop-dev/vtop/ui/format"
)

func init() { subcommands["rules"] = runRules }

// runRules is `vtop rules`: the active rules and thresholds as text,
// markdown (docs/rules.md) or Prometheus alerting rules.
func runRules(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := pflag.NewFlagSet("vtop rules", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("format", "text", "text, markdown or prometheus")
	fs.String("slo", "chat", "SLO profile the latency rules measure against")
	fs.Duration("window", time.Minute, "range of rate() and histogram_quantile() in the Prometheus rules (vtop's --window)")
	fs.String("config", "", "config file (default $VTOP_CONFIG, then $XDG_CONFIG_HOME/vtop/config.yaml)")
	fs.BoolP("help", "h", false, "show this help")
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: vtop rules [--format text|markdown|prometheus] [--slo NAME] [--window D] [--config FILE]\n\n%s", fs.FlagUsages())
		fmt.Fprintln(w, "\nThresholds, for durations and SLO profiles come from the config file's rules: and slo_profiles:\nsections; --slo and --window also from VTOP_SLO, VTOP_WINDOW and the config file. See docs/rules.md.")
	}
	err := fs.Parse(args)
	if h, _ := fs.GetBool("help"); h || errors.Is(err, pflag.ErrHelp) {
		usage(stdout)
		return 0
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "vtop rules: %v\n", err)
		return 3
	}
	if err != nil {
		usage(stderr)
		return fail(err)
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	path, explicit := configPath(fs, getenv)
	fc, err := loadFile(path, explicit)
	if err != nil {
		return fail(err)
	}
	// flags > VTOP_* > config file, as for the main command.
	if err := layer(fs, getenv, fc, path, "slo", "window"); err != nil {
		return fail(err)
	}
	slo, _ := fs.GetString("slo")
	window, _ := fs.GetDuration("window")
	format, _ := fs.GetString("format")
	rc, err := rulesConfig(fc, slo)
	if err != nil {
		return fail(err)
	}
	active, err := rc.Active()
	if err != nil {
		return fail(err)
	}
	switch format {
	case "text":
		_, err = io.WriteString(stdout, rulesText(active, rc.SLO))
	case "markdown":
		_, err = io.WriteString(stdout, rulesMarkdown(active, rc))
	case "prometheus":
		var b []byte
		b, err = detect.PrometheusRules(active, rc.SLO, detect.PromOptions{Range: window, Say: spell.Say})
		if err == nil {
			_, err = stdout.Write(b)
		}
	default:
		return fail(fmt.Errorf("--format must be text, markdown or prometheus, not %q", format))
	}
	if err != nil {
		return fail(err)
	}
	return 0
}

func sloLine(s diagnose.SLO) string {
	return fmt.Sprintf("%s (%s): TTFT %s, inter-token %s, E2E %s", s.Name, s.Desc, durOrZero(s.TTFT), durOrZero(s.ITL), durOrZero(s.E2E))
}

func forWords(r *detect.ActiveRule) string {
	f := "fires at once"
	if r.For > 0 {
		f = "for " + durOrZero(r.For)
	}
	res := "resolves at once"
	if r.ResolveFor > 0 {
		res = "resolves after " + durOrZero(r.ResolveFor)
	}
	return f + ", " + res
}

func settingsWords(r *detect.ActiveRule) string {
	var parts []string
	for i, p := range r.Params {
		s := p.Name + " " + spell.Value(detect.FormatParam(p, r.Values[i]))
		if r.Values[i] != p.Default {
			s += " (default " + spell.Value(detect.FormatParam(p, p.Default)) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// rulesText is what `vtop rules` prints.
func rulesText(rules []detect.ActiveRule, slo diagnose.SLO) string {
	var b strings.Builder
	fmt.Fprintf(&b, "vtop diagnosis rules: %d, SLO profile %s\n", len(rules), sloLine(slo))
	b.WriteString("A rule fires when its condition held for its for duration and resolves when its clear\ncondition held for its resolve duration. Change them in the config file (docs/rules.md).\n")
	for i := range rules {
		r := &rules[i]
		state := ""
		if !r.Enabled {
			state = "  DISABLED"
		}
		fmt.Fprintf(&b, "\n%s — %s  [%s; %s]%s\n", r.ID, r.Title, r.Scope, forWords(r), state)
		row := func(k, v string) {
			if v != "" {
				fmt.Fprintf(&b, "  %-9s %s\n", k, v)
			}
		}
		row("catches", r.Catches)
		row("fires", spell.Say(r.Text(r.Cond)))
		row("resolves", spell.Say(r.Text(r.Clear)))
		row("severity", spell.Say(r.Text(r.Severity)))
		row("action", spell.Say(r.Text(r.Action)))
		row("reads", r.Needs)
		row("settings", settingsWords(r))
	}
	return b.String()
}

// rulesMarkdown renders docs/rules.md (a test keeps the file in step).
func rulesMarkdown(rules []detect.ActiveRule, rc detect.RulesConfig) string {
	var b strings.Builder
	b.WriteString(rulesDocHead)
	b.WriteString("\n## SLO profiles\n\n`--slo` picks one (default `chat`); the latency row and the latency rules measure against it.\n\n| profile | use | TTFT | inter-token | E2E |\n|---|---|---|---|---|\n")
	for _, p := range diagnose.SLOProfiles() {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", p.Name, p.Desc, durOrZero(p.TTFT), durOrZero(p.ITL), durOrZero(p.E2E))
	}
	b.WriteString("\n## The rules\n\n| id | scope | for | resolve | severity |\n|---|---|---|---|---|\n")
	for i := range rules {
		r := &rules[i]
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s | %s |\n", r.ID, r.ID, r.Scope, durOrZero(r.For), durOrZero(r.ResolveFor), spell.Say(r.Text(r.Severity)))
	}
	for i := range rules {
		r := &rules[i]
		fmt.Fprintf(&b, "\n### %s\n\n**%s.** %s\n\n", r.ID, r.Title, r.Catches)
		fmt.Fprintf(&b, "- **fires** when %s, held for %s\n", spell.Say(r.Text(r.Cond)), durOrZero(r.For))
		fmt.Fprintf(&b, "- **resolves** when %s, held for %s\n", spell.Say(r.Text(r.Clear)), durOrZero(r.ResolveFor))
		fmt.Fprintf(&b, "- **severity**: %s\n", spell.Say(r.Text(r.Severity)))
		fmt.Fprintf(&b, "- **action**: %s\n", spell.Say(r.Text(r.Action)))
		fmt.Fprintf(&b, "- **reads**: %s\n", r.Needs)
		if len(r.Params) > 0 {
			b.WriteString("\n| setting | default | meaning |\n|---|---|---|\n")
			for _, p := range r.Params {
				fmt.Fprintf(&b, "| `%s` | %s | %s |\n", p.Name, spell.Value(detect.FormatParam(p, p.Default)), p.Help)
			}
		}
		if r.ID == "gpu_xid" {
			b.WriteString("\nThe XIDs vtop knows (others are warnings to look up in NVIDIA's catalog):\n\n| XID | meaning | level | action |\n|---|---|---|---|\n")
			for _, x := range sources.KnownXIDs() {
				fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", x.XID, x.Name, x.Level, x.Action.Advice())
			}
		}
	}
	b.WriteString(rulesDocTail)
	return b.String()
}

// durOrZero renders 2m, 30s, 1m30s, 0.
func durOrZero(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

const rulesDocHead = `# Diagnosis rules

<!-- Generated by ` + "`vtop rules --format markdown`" + ` (cmd/vtop/rules_test.go keeps it in step
with the code: ` + "`go test ./cmd/vtop -run TestRulesDoc -update`" + `). Edit the rule table in
diagnose/detect/rules_*.go, not this file. -->

vtop names the problem, shows the evidence and says what to change. Each rule
below reads the windowed history of one endpoint (or, for
` + "`replica_imbalance`" + `, all endpoints serving a model) and produces a
**finding**: rule id, severity, target (endpoint, model, data-parallel engine),
first and last seen, the measured values that made it fire, a plain
explanation, and the recommended action with concrete vLLM flags.

- **pending → firing → resolving.** While its condition holds a rule is
  *pending* ("holding 40s of 2m", shown apart and not counted in the exit
  status); it fires when the condition held for its hold. The hold is the
  rule's *for* while the data is within 1.5× of the threshold, and shrinks in
  proportion beyond (never under 15 s): data far past a threshold fires in
  seconds, marginal data keeps the long hold. A firing finding whose clear
  condition (or premise) holds is *resolving*: still shown with its age and
  today's evidence, its action withheld; it goes after its *resolve*
  duration. Between the two thresholds a firing finding stays. Severity rises
  at once and falls only after the lower severity held for *resolve*, so
  findings and their severity do not flap. ` + "`vtop --once`" + ` caps every hold at
  half its window: a report cannot wait longer than its run. ` + "`memory_leak`" + ` needs ten minutes of history, more than a
  report's window, so only the live view (or a long ` + "`--window`" + `) shows it.
- **Missing is not zero.** A signal the endpoint does not expose (a metric
  older releases lack, a window with no request) never makes a rule fire and
  never produces a number. The rule stays silent, and a recommendation says
  which metric or setting is missing instead of inventing a value.
- **Per engine.** KV-cache rules run per (model, data-parallel engine): the
  KV cache and the scheduler are per engine, and so are the flags.
- **One cause graph.** Its edges either restate or group. When a more
  specific rule fires on the same endpoint, the general one it restates
  (` + "`preemption`" + ` under ` + "`kv_cache_thrashing`" + `, ` + "`slo_breach`" + ` under the latency rules
  and ` + "`binding_limit`" + `) is not shown; it keeps its state and appears with its
  true first-seen time if the specific one resolves first. A symptom
  (` + "`queue_backlog`" + `, ` + "`slo_breach`" + `, ` + "`high_abort_rate`" + `) is grouped under its
  firing cause: the cause's severity, its action deferred to the cause.
- **Which limit binds.** Every endpoint gets one verdict, before any rule
  runs: the engine limit that holds its work back, tested by its mechanism
  (a LoRA adapter waiting for a slot; the KV cache pinned; drafts rejected
  too often; running flat at a plateau with requests waiting throughout and
  KV room, the plateau being the current ` + "`--max-num-seqs`" + `; tokens per step at
  a ceiling with a prefill-heavy mix; a busy GPU with room in batch and
  cache), or why none does (idle, asleep, a burst that drained, too few
  observations), or *unexplained* with what was ruled out. What one scrape
  proves is named at the first scrape (adapters listed waiting while every
  ` + "`--max-loras`" + ` slot is taken); the others wait for ten points of the window,
  and an engine that has made no progress at any point seen yet stays "too
  few observations" until the stall is long enough to call. A cache that
  preempted within the window binds from 80 % usage (the preempted
  sequences' blocks were freed). When the queue keeps growing beyond what
  raising the limit as far as the evidence allows could absorb, by more
  than the counting noise of the completions (2 ÷ √completions in the
  window), the verdict is *arrivals exceed capacity*, in replicas, with the
  flag as the smaller part. When most finished requests are aborts while a
  queue stood all window with its time p95 past 30 s, the clients give up
  in the queue: over a capacity limit (or none found) the verdict is
  *arrivals exceed capacity: clients give up*, not sized in replicas (the
  engine serves almost none) and advising to shed load; a limit that wastes
  capacity (a thrashing cache, LoRA slots, drafts) stays the verdict. Failed
  or expired KV transfers are a symptom of their own, with or without a
  queue. A rule's advice follows the verdict: a flag
  that cannot move the binding limit is never recommended. Model pools and
  the fleet get the limit most of their members share, or "no clear
  bottleneck".
- **Exit status.** ` + "`vtop --once`" + ` exits with the worst finding: 0 none (or only
  info), 1 warning, 2 critical, 3 when no endpoint is reachable.

## Recommendations and the vLLM version

Numbers are computed from the scrape, with the arithmetic in the finding
(` + "`why`" + `), then rounded down as operators set the flag (the ` + "`why`" + ` says how;
rounding down keeps the headroom and never raises past what the evidence
allows). A shown value holds until the computed one moves by more than 15%
and the rounded one would too: rounding's steps are never a move.

| flag | computed from | rounded |
|---|---|---|
| ` + "`--max-num-seqs`" + ` | KV blocks ÷ blocks per sequence; the live fit | exact below 16, a multiple of 4 below 128, of 8 from 128 |
| ` + "`--max-num-batched-tokens`" + ` | the step size that meets the ITL target; twice a binding budget | a multiple of 64 below 1,024, of 256 from 1,024 |
| ` + "`--gpu-memory-utilization`" + ` | vLLM's default 0.90; the GPU's free memory, or 0.05 steps | to 0.01 (down) |
| ` + "`--max-loras`" + ` | a slot per waiting adapter, at most twice today's | a whole count, exact |
| ` + "`num_speculative_tokens`" + ` | half the tokens drafted a step, or off | a whole token, down (at least 1) |
| replicas | Little's law on arrivals and in-flight requests | whole replicas, up |

SGLang's ` + "`--max-running-requests`" + `, ` + "`--chunked-prefill-size`" + ` and
` + "`--mem-fraction-static`" + ` round as the vLLM flags they stand for.

- **` + "`--max-num-seqs`" + `** for KV pressure: ` + "`num_gpu_blocks × (1 − headroom)`" + ` usable
  blocks, divided by the blocks one sequence of the measured average length
  (prompt + generated tokens per finished request) holds, rounded up to whole
  blocks. Example: 27,000 blocks × 0.85 = 22,950; 1,100 tokens ÷ 16 = 69 blocks;
  22,950 ÷ 69 = 332, set as **328**. Running sequences are longer than those that
  finished, so the advice is the smaller of that and the *live* fit, what
  running sequences hold now: (1 − headroom) × running ÷ KV usage (150
  running at KV 95%: 0.85 × 150 ÷ 0.95 = 134, set as **128**); both are in the ` + "`why`" + `. It
  never lowers to a value at or above what runs, and never raises past the live
  fit (a starving engine with 60 of 64 running at KV 71%: live fit 71, 64 → 68, not 328). vLLM does not expose the
  current value: set ` + "`max_num_seqs`" + ` per target in the config file to get
  "256 → 96" instead of "set it to 96".
- **` + "`--max-num-batched-tokens`" + `** for decode stutter: step time grows with the
  tokens a step carries; the median and p99 steps (` + "`iteration_tokens_total`" + `
  and the inter-token percentiles) give that growth, and the budget is where it
  meets the ITL target (1,990 tokens is set as 1,792).
- **` + "`--gpu-memory-utilization`" + `**: up to vLLM's default 0.90 for thrashing when
  deployed below it; down for OOM risk, computed to leave the headroom when
  vtop reads the GPU (0.95 − 0.044 = 0.906, set as 0.90), otherwise in 0.05 steps.
- **` + "`--enable-prefix-caching`" + `** when ` + "`cache_config_info`" + ` says it is off: V0
  leaves it off by default; V1 enables it by default, so off means the
  deployment passes ` + "`--no-enable-prefix-caching`" + `.
- **` + "`--enable-chunked-prefill`" + `** only for V0 engines: V1 always chunks
  prefills within ` + "`--max-num-batched-tokens`" + `.
- **` + "`--kv-cache-dtype fp8`" + `** when the cache is stored at the model's precision
  (` + "`cache_dtype auto`" + `), on releases that certainly accept it (≥ 0.5).
- **Swapping** (` + "`--swap-space`" + `, CPU KV) exists only in V0; V1 preempts by
  recompute, which ` + "`preemption`" + ` and ` + "`kv_cache_thrashing`" + ` watch.

## Configuration

Thresholds, *for* and *resolve* durations and SLO profiles live in the config
file; unknown rule ids or settings are errors. Ratios are written as
fractions (` + "`kv_high: 0.92`" + ` is 92%), times as durations (` + "`queue_p95: 10s`" + `) or
seconds, counts and rates as plain numbers.

` + "```yaml" + `
slo: chat                     # or --slo / VTOP_SLO
slo_profiles:
  chat: {ttft: 400ms}         # override a built-in target
  voice: {desc: voice assistant, ttft: 300ms, itl: 40ms, e2e: 5s}
rules:
  kv_cache_thrashing: {for: 3m, resolve_for: 1m, kv_high: 0.92}
  gpu_underutilization: {disabled: true}
targets:
  - url: gpu-node-3:8000
    max_num_seqs: 256         # what vLLM does not expose, for the advice
    pool: us-east             # replica_imbalance compares replicas of one pool (default: same model)
` + "```" + `

` + "`vtop rules`" + ` prints the active rules and thresholds with this file applied.
`

const rulesDocTail = `
## The same rules in Prometheus

` + "`vtop rules --format prometheus > vtop-rules.yml`" + ` writes equivalent alerting
rules (checked by ` + "`promtool check rules`" + ` in CI) so the same logic can run in
your alerting. Every vLLM metric name comes from vtop's metric table, and the
aliases a signal had across releases are joined with ` + "`or`" + `
(` + "`kv_cache_usage_perc`" + ` or ` + "`gpu_cache_usage_perc`" + `, ` + "`inter_token_latency_seconds`" + ` or
` + "`time_per_output_token_seconds`" + `, …), so one file works on every release. A
rule's *for* becomes ` + "`for`" + `, its resolve duration ` + "`keep_firing_for`" + `
(Prometheus ≥ 2.42), and rules with a critical level render a second alert
with the ` + "`Critical`" + ` suffix. ` + "`--window`" + ` sets the range of ` + "`rate()`" + ` and
` + "`histogram_quantile()`" + ` (give it at least four scrape intervals).

` + "`gpu_throttling`" + ` and ` + "`gpu_xid`" + ` read the GPUs through NVML, which no vLLM metric
carries: they have no Prometheus form (alert on DCGM exporter's clock-event and
XID series for that).

Where PromQL cannot say exactly the same thing: the hysteresis band between
the fire and clear thresholds is approximated by ` + "`keep_firing_for`" + `;
` + "`memory_leak`" + `'s straight-line test (R²) becomes "the 5-minute slope stayed
above the threshold through the whole window"; ` + "`gpu_underutilization`" + `
averages the gauges over the range; target rules use Prometheus' own ` + "`up`" + ` and
` + "`scrape_duration_seconds`" + ` for targets that served vLLM metrics in the last
hour; the recommended flag values need the arithmetic above and are not in
the alerts.

## Verdicts on simulated incidents

Each scenario of the simulator (` + "`sim.Scenarios`" + `) changes what production
changes, written from vLLM's mechanism, never a symptom. A pathology is opened
on a replica broken for three minutes and must be named within 30 s; a quiet
shape runs ten minutes and must raise no warning or critical finding and exit
0. The table below is generated by ` + "`go test ./diagnose/detect -run TestVerdictScenarios`" + `
(` + "`-update`" + ` rewrites it; the test fails when it is stale).

<!-- verdict-table:begin -->
<!-- verdict-table:end -->
`
