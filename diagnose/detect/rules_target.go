package detect

import (
	"fmt"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// Rules about the scrape target itself; they run whatever its state.

// endpoint_down parameters, looked up by name: a check indexes its values
// through these.
var (
	edParams = params{
		{"critical", 120, "s", "continuous outage that makes it critical"},
		{"flap_count", 2, "count", "outages within the flap window that count as flapping"},
		{"flap_window", 600, "s", "the window outages are counted in"},
	}
	edCritical   = edParams.index("critical")
	edFlapCount  = edParams.index("flap_count")
	edFlapWindow = edParams.index("flap_window")
)

var ruleEndpointDown = &Rule{
	ID: "endpoint_down", Title: "Endpoint down", Scope: ScopeTarget,
	memory:   func() ruleMemory { return &downHistory{} }, // outage starts, for flapping
	Catches:  "The /metrics endpoint refuses, errors or hangs (the vLLM process is gone, loading, wedged, or unreachable), or keeps dropping out (flapping).",
	Needs:    "the scrape itself",
	Cond:     "no successful scrape (down, or stale: polls hang), or ≥ {flap_count} outages began within {flap_window}",
	Clear:    "scrapes succeed and fewer than {flap_count} outages began within {flap_window}",
	Severity: "warning; critical when down for ≥ {critical}",
	Action:   "check the process (systemctl status, kubectl describe/logs), the port, and the kernel log for GPU Xid errors",
	// 45 s: a restart's model load (tens of seconds) is endpoint_restarted,
	// not an outage; a second outage within the flap window fires at once.
	For: 45 * time.Second, ResolveFor: 30 * time.Second,
	Params: edParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		ep := u.ep
		n, first := memoryOf[*downHistory](u).recent(x.now, seconds(p[edFlapWindow]))
		flapping := n > 0 && float64(n) >= p[edFlapCount]
		switch {
		case isDown(ep.State):
			x.since = ep.Since
			if flapping {
				x.since = first // the outages together have lasted since the first
			}
			if !ep.Since.IsZero() && x.now.Sub(ep.Since) >= seconds(p[edCritical]) {
				return condMet, diagnose.SevCritical
			}
			return condMet, diagnose.SevWarning
		case flapping:
			x.since = first
			return condMet, diagnose.SevWarning
		}
		return condClear, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		ep := u.ep
		n, first := memoryOf[*downHistory](u).recent(x.now, seconds(p[edFlapWindow]))
		if ep.NotVLLM && isDown(ep.State) {
			// It answers: not an outage, the wrong port or another program.
			fd.Title = "Not a vLLM endpoint"
			fd.Summary = say("answers without vLLM metrics since %s: %s", ep.Since.UTC().Format("15:04:05 MST"), ep.LastError)
			fd.Explain = plain("Something answers on this address, but its /metrics has no vllm:* series: another program holds the port, another serving engine runs there, or the path is not vLLM's API server.")
			fd.Evidence = append(fd.Evidence, ev("last error", ep.LastError, 0))
			fd.Action = plain("point vtop at the vLLM API server's port (vllm serve --port, default 8000) and path /metrics")
			return
		}
		if isDown(ep.State) {
			fd.Summary = say("%s since %s (%s)", ep.State, ep.Since.UTC().Format("15:04:05 MST"), dur(x.now.Sub(ep.Since)))
			if n > 1 {
				fd.Summary = fd.Summary.Cat(say(", outage %d in %s", n, dur(seconds(p[edFlapWindow]))))
			}
			if ep.LastError != "" {
				fd.Summary = fd.Summary.Add(": %s", ep.LastError)
			}
			if !ep.LastSuccess.IsZero() {
				fd.Evidence = append(fd.Evidence, evNum("since last success", x.now.Sub(ep.LastSuccess).Seconds(), diagnose.UnitSeconds, 0))
			}
			fd.Explain = plain("vtop cannot read this endpoint's metrics, so nothing else about it can be diagnosed. A refused connection usually means the vLLM process is gone or still loading the model; a timeout means it is wedged or the network is.")
		} else {
			fd.Title = "Endpoint flapping" // up now: "down" would be false
			fd.Summary = say("%d outages in %s (first %s ago), up now", n, dur(seconds(p[edFlapWindow])), dur(x.now.Sub(first)))
			fd.Explain = plain("The endpoint keeps dropping out and coming back: restarts in a loop (an OOM kill, a failing health check), or a flaky network path. Clients see errors during every outage.")
		}
		fd.Evidence = append(fd.Evidence, ev("state", ep.State.String(), 0), evNum("outages", float64(n), diagnose.UnitCount, seconds(p[edFlapWindow])))
		if ep.LastError != "" {
			fd.Evidence = append(fd.Evidence, ev("last error", ep.LastError, 0))
		}
		fd.Action = plain("check the vLLM process and its log (systemctl status / kubectl describe pod and logs: OOMKilled, CUDA errors), that it listens on this port, and the kernel log for GPU Xid errors")
		if isDown(ep.State) {
			// The first step follows why the scrape fails: a DNS typo or
			// a wrong path is not a dead process.
			if explain, action := downAdvice(sources.Classify(ep.LastError)); action != "" {
				fd.Explain, fd.Action = plain(explain), plain(action)
			}
		}
	},
	prom: func(g *promGen, p []float64) []promAlert {
		// up and its changes are Prometheus' own series, not vLLM's.
		// Only targets that served vLLM metrics in the last hour.
		flap := int(p[edFlapCount])*2 - 1
		vllm := g.servedVLLM()
		return []promAlert{
			{Severity: "warning", Expr: fmt.Sprintf("(up == 0 or changes(up[%s]) >= %d) and on(job, instance) %s", g.dur(seconds(p[edFlapWindow])), flap, vllm)},
			{Severity: "critical", Expr: fmt.Sprintf("up == 0 and on(job, instance) %s", vllm), For: seconds(p[edCritical])},
		}
	},
}

// downAdvice is what a down endpoint's error says to do first; "" when the
// error says nothing more than "down" (the process advice stands).
func downAdvice(k sources.FailKind) (explain, action string) {
	switch k {
	case sources.FailDNS:
		return "The endpoint's host name does not resolve: a typo in the target, a Service or host that does not exist (yet), or a resolver that cannot reach it. Nothing was asked of vLLM.",
			"check the host name in the target for a typo and that it resolves (getent hosts NAME; kubectl get svc for a Service)"
	case sources.FailRefused:
		return "The host answers but nothing listens on this port: the vLLM process is gone (crashed, OOM-killed), still starting, or serving on another port.",
			"check that vLLM runs and listens on this port (systemctl status / kubectl describe pod and logs: OOMKilled, CUDA errors; ss -ltnp; vllm serve --port)"
	case sources.FailReset:
		return "The connection dropped while the answer was on its way: the process died mid-answer, or a proxy or load balancer cut it.",
			"check the vLLM process log for a crash at that time, and any proxy between vtop and the engine"
	case sources.FailNotFound:
		return "A server answers on this port, but not at this path: a typo in the path (/metrcs), a prefix a proxy adds, or a server that is not vLLM's API server.",
			"check the target's path: vLLM serves /metrics on its API port (curl -s HOST:PORT/metrics | head)"
	case sources.FailHTML:
		return "An HTML page answers where metrics should: a web UI, a login page of a proxy, or another program holds this port or path.",
			"point vtop at vLLM's API server port and path /metrics (not a dashboard, proxy login or gateway page)"
	case sources.FailTLS:
		return "The TLS handshake failed: the certificate is not signed by a CA vtop trusts, has the wrong name, or the server speaks plain HTTP.",
			"give the issuing CA with --ca-file (or use http:// if the server does not speak TLS); --insecure-skip-verify only when you must"
	case sources.FailAuth:
		return "The server refuses vtop's credentials (401/403): no token, a rotated or expired one, or a user without access to /metrics.",
			"check --bearer-token-file / VTOP_BEARER_TOKEN or basic auth against what the server expects (a rotated token, the proxy's auth)"
	case sources.FailTimeout:
		return "The server accepted the connection but did not answer within --timeout: a wedged engine (a stuck collective, a hung GPU), an overloaded host, or a slow network path.",
			"check the process (py-spy dump --pid PID), the kernel log for GPU Xid errors and the network path; raise --timeout only if the body is simply large"
	case sources.FailTooLarge:
		return "The metrics body is larger than --max-body: many LoRA adapters, models or engines multiply the series.",
			"raise --max-body (at most 1GiB), or reduce the series the server exposes"
	}
	return "", ""
}

// seconds saturates: a bucket bound of 1e300 must not overflow into a
// negative duration in a finding.
func seconds(v float64) time.Duration { return diagnose.FromSeconds(v) }

var ruleRestarted = &Rule{
	ID: "endpoint_restarted", Title: "Endpoint restarted", Scope: ScopeTarget,
	Catches:  "The vLLM process restarted: process_start_time_seconds changed, or its counters went back to zero.",
	Needs:    "process_start_time_seconds (single-process registry) or counter resets",
	Cond:     "a restart seen within the last 10 minutes",
	Clear:    "10 minutes after the restart",
	Severity: "info",
	Action:   "if nobody restarted it, read the engine's log around the restart (OOM kill, CUDA error, failed health check)",
	For:      0, ResolveFor: 0,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		if u.ep.RestartedAt.IsZero() {
			return condClear, 0
		}
		x.since = u.ep.RestartedAt
		return condMet, diagnose.SevInfo
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		at := u.ep.RestartedAt
		fd.Summary = say("restarted %s ago (%s)", dur(x.now.Sub(at)), at.UTC().Format("15:04:05 MST"))
		fd.Evidence = []diagnose.Evidence{ev("restarted at", at.UTC().Format(time.RFC3339), 0)}
		fd.Explain = plain("A new process serves this endpoint: counters started again from zero (vtop corrects its rates across the reset) and the KV and prefix caches are cold.")
		fd.Action = plain("if the restart was not planned, find its cause in the engine's log (OOM kill, CUDA error, failed health check)")
		if rs := u.ep.Restarts; len(rs) > 0 && rs[len(rs)-1].At.Equal(at) && rs[len(rs)-1].CacheChanged() {
			// A deploy that changed the engine's flags: say what it
			// changed, where the next incident's cause may be.
			r := rs[len(rs)-1]
			fd.Summary = fd.Summary.Add("; came back with %s", r.CacheWords())
			fd.Evidence = append(fd.Evidence, evNum("KV cache before", r.KVBefore, diagnose.UnitTokens, 0), evNum("KV cache after", r.KVAfter, diagnose.UnitTokens, 0))
			fd.Action = plain("the restart changed the engine's KV cache: if that was not meant, restore the deploy's cache settings (--gpu-memory-utilization, --kv-cache-dtype, the model)")
		}
	},
	prom: func(g *promGen, p []float64) []promAlert {
		return []promAlert{{Severity: "info", Expr: fmt.Sprintf("changes(%s[10m]) > 0", g.procName(sources.PStartTime))}}
	},
}

// scrape_slow parameters, looked up by name: a check indexes its values
// through these.
var (
	ssParams = params{
		{"slow", 1, "s", "scrape duration that counts as slow"},
		{"clear", 0.5, "s", "scrape duration below which it clears"},
	}
	ssSlow  = ssParams.index("slow")
	ssClear = ssParams.index("clear")
)

var ruleScrapeSlow = &Rule{
	ID: "scrape_slow", Title: "Slow /metrics", Scope: ScopeTarget,
	Catches:  "/metrics answers slowly: a huge exposition (label explosion: per-pid series, many LoRA adapters), a multiprocess registry on slow storage, or an overloaded API server.",
	Needs:    "the scrape's duration",
	Cond:     "the last scrape took ≥ {slow}",
	Clear:    "scrapes take < {clear}",
	Severity: "warning",
	Action:   "look at the exposition's size and series count; keep PROMETHEUS_MULTIPROC_DIR on local disk; raise vtop's --timeout/--interval if the endpoint is simply far away",
	For:      time.Minute, ResolveFor: time.Minute,
	Params: ssParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		d := u.ep.ScrapeDuration.Seconds()
		switch {
		case u.ep.State != diagnose.StateUp || d <= 0:
			return condUnknown, 0
		case d >= p[ssSlow]:
			return condMet, diagnose.SevWarning
		case d < p[ssClear]:
			return condClear, 0
		}
		return condHold, 0
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		ep := u.ep
		fd.Summary = say("scrape took %s (%d samples)", dur(ep.ScrapeDuration), ep.Samples)
		fd.Evidence = []diagnose.Evidence{evNum("scrape duration", ep.ScrapeDuration.Seconds(), diagnose.UnitSeconds, 0), evNum("samples", float64(ep.Samples), diagnose.UnitCount, 0)}
		fd.Explain = plain("A slow /metrics delays every number vtop shows for this endpoint and can time out. Usually the exposition is very large, or the API server is too busy to answer.")
		fd.Action = say("check the exposition (%d samples) for per-pid or per-adapter series; keep PROMETHEUS_MULTIPROC_DIR on local disk; raise --timeout if the endpoint is far away", ep.Samples)
	},
	prom: func(g *promGen, p []float64) []promAlert {
		// scrape_duration_seconds is Prometheus' own series.
		return []promAlert{{Severity: "warning", Expr: fmt.Sprintf("scrape_duration_seconds >= %s and on(job, instance) %s", g.num(p[ssSlow]), g.servedVLLM())}}
	},
}
