// Package report renders a frame as the headless report (`vtop --once`):
// a compact four-row table per endpoint and a fleet line, or JSON.
package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/diagnose/detect"
	"github.com/vtop-dev/vtop/sources"
	f "github.com/vtop-dev/vtop/ui/format"
)

// Status is the monitoring-plugin verdict, also the process exit status.
type Status int

const (
	OK       Status = 0
	Warning  Status = 1
	Critical Status = 2
	Unknown  Status = 3
)

func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Warning:
		return "warning"
	case Critical:
		return "critical"
	}
	return "unknown"
}

// FrameStatus is the verdict: unknown when no endpoint answered, else the
// worst finding's severity (endpoint_down included; info counts as OK).
func FrameStatus(fr *diagnose.Frame) Status {
	if fr.Fleet.Total == 0 || fr.Fleet.Up == 0 {
		return Unknown
	}
	switch w, ok := detect.Worst(fr.Findings); {
	case !ok:
		return OK
	case w == diagnose.SevCritical:
		return Critical
	case w == diagnose.SevWarning:
		return Warning
	}
	return OK
}

// NoAnswerPolls is how many polls of every target --once waits for an
// answer before it reports UNKNOWN at once.
const NoAnswerPolls = 3

// Run is how the collection behind a report went.
type Run struct {
	Window      time.Duration // the window asked for
	Elapsed     time.Duration // how long it collected
	Interrupted bool          // a signal ended it before the window
	NoAnswer    bool          // ended early: no target answered NoAnswerPolls polls
}

// span says what the report covers: "window 1m", or "interrupted after 9s
// of 1m", or "stopped after 2s: no target answered".
func (r Run) span(fr *diagnose.Frame) string {
	switch {
	case r.NoAnswer:
		return "stopped after " + f.Dur(r.Elapsed) + " of " + f.Dur(r.Window) + ": no target answered " + fmt.Sprint(NoAnswerPolls) + " polls"
	case r.Interrupted:
		return "interrupted after " + f.Dur(r.Elapsed) + " of " + f.Dur(r.Window)
	}
	return "window " + f.Dur(fr.Window)
}

// RunStatus is FrameStatus for a report's run: an interrupted report
// takes its status from what it saw, so a pending finding counts at its
// severity and an endpoint down or stale is at least a warning (no hold
// could pass in the time it ran).
func RunStatus(fr *diagnose.Frame, r Run) Status {
	st := FrameStatus(fr)
	if st == Unknown || !r.Interrupted {
		return st
	}
	if w, ok := detect.Worst(fr.Pending); ok && w > diagnose.SevInfo {
		st = max(st, Status(w))
	}
	for i := range fr.Endpoints {
		if s := fr.Endpoints[i].State; s == diagnose.StateDown || s == diagnose.StateStale {
			st = max(st, Warning)
		}
	}
	return st
}

// statusText is the header's status, with why where the findings alone
// would not say it.
func statusText(fr *diagnose.Frame, st Status) string {
	s := strings.ToUpper(st.String())
	if st == Unknown && fr.Fleet.Total > 0 && fr.Fleet.Up == 0 {
		s += " (no target answered: nothing but its reachability could be judged)"
	} else if st == Unknown && fr.Fleet.Total == 0 && len(fr.Problems) > 0 {
		s += " (no target: " + fr.Problems[0] + ")"
	}
	return s
}

// WriteTextRun writes the human report, saying how the run went.
func WriteTextRun(w io.Writer, fr *diagnose.Frame, st Status, r Run) error {
	var b strings.Builder
	fmt.Fprintf(&b, "vtop report  %s  %s  interval %s  status %s\n",
		fr.Time.Format("2006-01-02 15:04:05 MST"), r.span(fr), f.Dur(fr.Interval), statusText(fr, st))
	for _, p := range fr.Problems {
		b.WriteString("problem: " + p + "\n")
	}
	writeVerdicts(&b, fr)
	writeFindings(&b, fr)
	writeTimeline(&b, fr)
	for i := range fr.Endpoints {
		b.WriteByte('\n')
		writeEndpoint(&b, fr, &fr.Endpoints[i])
		if l := EndpointGPULine(fr, &fr.Endpoints[i]); l != "" {
			b.WriteString("  " + l + "\n")
		}
	}
	b.WriteByte('\n')
	writeGPU(&b, fr)
	b.WriteByte('\n')
	b.WriteString(FleetLine(fr))
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// writeVerdicts is one assessment line for the fleet, each pool (those the
// configuration names, else the models) and each endpoint, above the
// findings.
func writeVerdicts(b *strings.Builder, fr *diagnose.Frame) {
	l := VerdictLine(&fr.Fleet.Verdict, true)
	if l == "" {
		return
	}
	b.WriteString("\nassessment\n")
	fmt.Fprintf(b, "  fleet  %s\n", l)
	for i := range fr.Fleet.Pools {
		p := &fr.Fleet.Pools[i]
		if l := VerdictLine(&p.Verdict, true); l != "" {
			fmt.Fprintf(b, "  pool %s  %s\n", p.Pool, l)
		}
	}
	if len(fr.Fleet.Pools) == 0 && len(fr.Fleet.Models) > 1 {
		for i := range fr.Fleet.Models {
			m := &fr.Fleet.Models[i]
			if l := VerdictLine(&m.Verdict, true); l != "" {
				fmt.Fprintf(b, "  pool %s  %s\n", m.Model, l)
			}
		}
	}
	for i := range fr.Endpoints {
		if l := VerdictLine(&fr.Endpoints[i].Verdict, false); l != "" {
			fmt.Fprintf(b, "  %s  %s\n", fr.Endpoints[i].Name, l)
		}
	}
}

func writeEndpoint(b *strings.Builder, fr *diagnose.Frame, e *diagnose.EndpointView) {
	state := strings.ToUpper(e.State.String())
	if !e.Since.IsZero() {
		state += " " + f.Age(fr.Time, e.Since)
	}
	if !e.RestartedAt.IsZero() {
		state += ", restarted " + f.Age(fr.Time, e.RestartedAt) + " ago"
	}
	fmt.Fprintf(b, "%s  [%s]", e.Name, state)
	if e.State == diagnose.StatePending {
		b.WriteString("  not polled yet\n")
		return
	}
	if e.LastError != "" {
		fmt.Fprintf(b, "  %s", e.LastError)
	}
	if e.LastSuccess.IsZero() {
		b.WriteByte('\n')
		return
	}
	if e.State != diagnose.StateUp {
		fmt.Fprintf(b, "  (numbers below are %s old)", f.Age(fr.Time, e.LastSuccess))
	}
	b.WriteByte('\n')
	models := strings.Join(e.Models, ", ")
	if models == "" {
		models = f.Missing
	}
	ver := e.Version.String() // another engine names itself ("SGLang"), as on the screen
	if e.Version.Server == sources.ServerVLLM {
		ver = "vLLM " + ver
	}
	fmt.Fprintf(b, "  %s  model %s  engines %d  scrape %s  %d samples\n",
		ver, models, e.Stats.Engines, f.Dur(e.ScrapeDuration), e.Samples)

	switch e.Kind {
	case sources.KindRouter:
		b.WriteString("  this is a router (production-stack's, Dynamo's frontend), not an engine: point vtop at the engines behind it\n")
		for _, l := range RouterLines(fr, e) {
			b.WriteString("  " + l + "\n")
		}
		return
	case sources.KindNoSamples:
		b.WriteString("  vllm:* families are declared but carry no samples (V0 multiprocess registry not collected?)\n")
		return
	}
	for _, row := range Rows(&e.Stats, e.MaxNumSeqs) {
		fmt.Fprintf(b, "  %-11s %s\n", row.Name, strings.Join(row.Cells, " │ "))
	}
	if len(e.Subs) > 1 {
		for _, s := range e.Subs {
			fmt.Fprintf(b, "    %s: KV %s  run %s  wait %s  TTFT p95 %s  gen %s tok/s\n", subName(s.Key),
				f.Percent(s.Stats.KVUsage), f.Count(s.Stats.Running), f.Count(s.Stats.Waiting),
				qs(s.Stats.TTFT, s.Stats.TTFT.P95), f.Rate(s.Stats.GenTokRate))
		}
	}
	for _, w := range e.Warnings {
		fmt.Fprintf(b, "  warning: %s\n", w)
	}
}

func subName(k sources.SubKey) string {
	if k.Engine == "" {
		return k.Model
	}
	return fmt.Sprintf("%s engine %s", k.Model, k.Engine)
}

// Row is one of the four report rows.
type Row struct {
	Name  string
	Cells []string
}

func quant(name string, q diagnose.Quantiles) string {
	if math.IsNaN(q.P50) {
		if q.Count == 0 {
			return name + " -- (no requests)"
		}
		return name + " --"
	}
	return fmt.Sprintf("%s p50 %s p95 %s p99 %s (n=%s)", name, qs(q, q.P50), qs(q, q.P95), qs(q, q.P99), f.Count(q.Count))
}

// qs renders one percentile of q at the resolution of its buckets.
func qs(q diagnose.Quantiles, v float64) string { return f.Quantile(v, q.Lowest, q.Highest) }

// Rows renders the four rows (latency, cache, queue, throughput) as text cells.
func Rows(s *diagnose.Stats, maxNumSeqs int) []Row {
	lat := []string{quant("TTFT", s.TTFT), quant("ITL", s.ITL), "E2E p95 " + qs(s.E2E, s.E2E.P95), "queue p95 " + qs(s.Queue, s.Queue.P95)}
	kv := "KV " + f.Percent(s.KVUsage)
	if !math.IsNaN(s.KVUsageMax) && s.Engines > 1 {
		kv += " (max engine " + f.Percent(s.KVUsageMax) + ")"
	}
	if !math.IsNaN(s.KVCapacityTokens) {
		kv += " of " + f.Tokens(s.KVCapacityTokens) + " tokens"
	}
	hit := StatText(s, diagnose.StatPrefixHitRatio)
	if s.PrefixCaching == sources.TriNo {
		hit = "prefix caching off"
	}
	cache := []string{kv, hit, StatText(s, diagnose.StatPreemptions)}
	if !math.IsNaN(s.Swapped) {
		cache = append(cache, StatText(s, diagnose.StatSwapped))
	}
	run := StatText(s, diagnose.StatRunning)
	if slots := diagnose.BatchSlots(maxNumSeqs, s); slots > 0 {
		run += " of " + fmt.Sprint(slots)
		if s.Engines > 1 {
			run += fmt.Sprintf(" (%d × %d engines)", maxNumSeqs, s.Engines)
		}
	}
	wait := StatText(s, diagnose.StatWaiting)
	if !math.IsNaN(s.WaitingCapacity) || !math.IsNaN(s.WaitingDeferred) {
		wait += fmt.Sprintf(" (capacity %s, deferred %s)", f.Count(s.WaitingCapacity), f.Count(s.WaitingDeferred))
	}
	queue := []string{run, wait, "queue p95 " + qs(s.Queue, s.Queue.P95)}
	tput := []string{StatText(s, diagnose.StatPromptTokRate), StatText(s, diagnose.StatGenTokRate), StatText(s, diagnose.StatReqRate)}
	if len(s.Finish) > 0 {
		var parts []string
		for _, fs := range s.Finish {
			parts = append(parts, fs.Reason+" "+f.Percent(fs.Share))
		}
		tput = append(tput, strings.Join(parts, " "))
	}
	tput = append(tput, "avg prompt "+f.Tokens(s.AvgPromptLen)+" gen "+f.Tokens(s.AvgGenLen))
	return []Row{{"latency", lat}, {"cache", cache}, {"queue", queue}, {"throughput", tput}}
}

// FleetLine summarises the fleet in one line.
func FleetLine(fr *diagnose.Frame) string {
	s := &fr.Fleet.Stats
	worst, worstName := diagnose.Quantiles{P95: math.NaN()}, ""
	for _, e := range fr.Endpoints {
		if e.State == diagnose.StateUp && (math.IsNaN(worst.P95) || e.Stats.TTFT.P95 > worst.P95) && !math.IsNaN(e.Stats.TTFT.P95) {
			worst, worstName = e.Stats.TTFT, e.Name
		}
	}
	line := fmt.Sprintf("fleet: %d/%d up │ gen %s tok/s │ prompt %s tok/s │ %s req/s │ TTFT p95 %s",
		fr.Fleet.Up, fr.Fleet.Total, f.Rate(s.GenTokRate), f.Rate(s.PromptTokRate), f.Rate(s.ReqRate), qs(s.TTFT, s.TTFT.P95))
	if worstName != "" && fr.Fleet.Up > 1 {
		line += fmt.Sprintf(" (worst %s on %s)", qs(worst, worst.P95), worstName)
	}
	return line + " │ KV " + f.Percent(s.KVUsage)
}
