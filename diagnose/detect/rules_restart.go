package detect

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// crash_loop parameters, looked up by name: a check indexes its values
// through these.
var (
	clParams = params{
		{"count", 3, "count", "restarts within the window that make a crash loop"},
		{"window", 900, "s", "the window restarts are counted in"},
		{"climb", 1.5, "factor", "memory before a restart over the new process's first reading that counts as climbing"},
	}
	clCount  = clParams.index("count")
	clWindow = clParams.index("window")
	clClimb  = clParams.index("climb")
)

var ruleCrashLoop = &Rule{
	ID: "crash_loop", Title: "Crash loop", Scope: ScopeTarget,
	Catches:  "The vLLM process dies and its supervisor (systemd, Kubernetes, a shell loop) starts it again, over and over: an OOM kill at a memory limit, a CUDA error, a failing health check. Every restart drops the requests in flight and loads the model again.",
	Needs:    "process_start_time_seconds or counter resets (_created where exposed); process_resident_memory_bytes and the GPU join for the memory before each restart",
	Cond:     "≥ {count} restarts within {window}; or one fewer (two at least) when memory climbed before each of them ({climb} × the new process's first reading, or at its limit): an OOM kill's signature, again",
	Clear:    "fewer than {count} restarts within {window}",
	Severity: "critical",
	Action:   "read the previous process's log (kubectl logs --previous, journalctl -u) and the kernel log (dmesg | grep -i oom); when memory climbed before each restart, find the leak or raise the memory limit",
	For:      0, ResolveFor: time.Minute,
	Params: clParams,
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		rs := restartsIn(u.ep.Restarts, x.now, seconds(p[clWindow]))
		// Two OOM kills in a row are a loop already: the process fails
		// the same way each time (the simulator's, opened mid-loop, was
		// named at its third restart, a minute after its second).
		oomEach := len(rs) >= 2 && float64(len(rs)) >= p[clCount]-1 && climbedEach(rs, p[clClimb])
		if float64(len(rs)) < p[clCount] && !oomEach {
			return condClear, 0
		}
		x.since = rs[0].At
		return condMet, diagnose.SevCritical
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		w := seconds(p[clWindow])
		rs := restartsIn(u.ep.Restarts, x.now, w)
		every := restartInterval(rs)
		fd.Summary = say("%d restarts in %s, every %s", len(rs), dur(rs[len(rs)-1].At.Sub(rs[0].At)), dur(every))
		if down := meanDown(rs); down > 0 {
			fd.Summary = fd.Summary.Cat(say(" (down %s each)", dur(down)))
		}
		fd.Evidence = []diagnose.Evidence{evNum("restarts", float64(len(rs)), diagnose.UnitCount, w), evNum("restart interval", every.Seconds(), diagnose.UnitSeconds, w),
			ev("first restart", rs[0].At.UTC().Format(time.RFC3339), 0), ev("last restart", rs[len(rs)-1].At.UTC().Format(time.RFC3339), 0)}
		if b, ok := memBefore(rs, func(r diagnose.Restart) float64 { return r.RSSBefore }); ok {
			fd.Evidence = append(fd.Evidence, evText("resident memory before each restart", b, w))
		}
		if b, ok := memBefore(rs, func(r diagnose.Restart) float64 { return r.GPUMemBefore }); ok {
			fd.Evidence = append(fd.Evidence, evText("GPU memory before each restart", b, w))
		}
		oom := oomSuspect(rs, p[clClimb])
		if !oom.IsZero() {
			fd.Summary = fd.Summary.Add("; %s: OOM kill suspected", oom)
		}
		if isDown(u.ep.State) {
			fd.Summary = fd.Summary.Cat(plain("; down now"))
		}
		fd.Explain = plain("The process serving this endpoint keeps ending and being started again: each restart refuses connections while the model loads, drops every request in flight and starts the KV and prefix caches cold. A restart at a steady interval is a supervisor restarting a process that fails the same way each time.")
		if !oom.IsZero() {
			fd.Explain = fd.Explain.Cat(plain(" Its memory climbed before each restart and fell after it: the kernel's OOM killer at a cgroup or host limit is the usual end."))
			fd.Action = plain("OOM suspected: confirm in the kernel log (dmesg | grep -i oom, kubectl describe pod: OOMKilled); find what grows (a leak in the API server, request logging, an unbounded cache) or raise the memory limit; then read the previous process's log (kubectl logs --previous, journalctl -u)")
			return
		}
		fd.Action = plain("read the previous process's log (kubectl logs --previous, journalctl -u) for the error it ends on (CUDA error, NCCL timeout, failed health check, bad argument after a deploy); the kernel log for Xid errors and OOM kills")
	},
	prom: func(g *promGen, p []float64) []promAlert {
		return []promAlert{{Severity: "critical", Expr: fmt.Sprintf("changes(%s[%s]) >= %s", g.procName(sources.PStartTime), g.dur(seconds(p[clWindow])), g.num(p[clCount]))}}
	},
}

// restartsIn is the restarts within w of now, oldest first.
func restartsIn(rs []diagnose.Restart, now time.Time, w time.Duration) []diagnose.Restart {
	for len(rs) > 0 && now.Sub(rs[0].At) > w {
		rs = rs[1:]
	}
	return rs
}

// restartInterval is the median gap between consecutive restarts: the
// supervisor's cycle, which one slow start does not move.
func restartInterval(rs []diagnose.Restart) time.Duration {
	if len(rs) < 2 {
		return 0
	}
	gaps := make([]float64, 0, len(rs)-1)
	for i := 1; i < len(rs); i++ {
		gaps = append(gaps, rs[i].At.Sub(rs[i-1].At).Seconds())
	}
	return seconds(median(gaps))
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// meanDown is the mean gap the restarts left (scrapes refused while the
// model loads), zero when unknown.
func meanDown(rs []diagnose.Restart) time.Duration {
	var sum time.Duration
	n := 0
	for _, r := range rs {
		if d := r.Down(); d > 0 {
			sum += d
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / time.Duration(n)
}

// memBefore lists a memory reading before each restart ("3.9 GiB, 4.0 GiB,
// 4.0 GiB"), the newest last; empty when none is known.
func memBefore(rs []diagnose.Restart, get func(diagnose.Restart) float64) (diagnose.Text, bool) {
	var out []diagnose.Text
	known := false
	for _, r := range rs {
		if v := get(r); !math.IsNaN(v) {
			out = append(out, say("%s", mib(v)))
			known = true
		} else {
			out = append(out, plain(missing))
		}
	}
	return diagnose.Join(out, ", "), known
}

// oomSuspect says how memory climbed before most restarts and fell after
// them (resident, else GPU memory), or near a known limit; empty when it
// did not.
// climbedEach reports memory that climbed before every one of rs, by
// resident memory or by GPU memory, as oomSuspect reads a climb.
func climbedEach(rs []diagnose.Restart, climb float64) bool {
	each := func(before, after func(diagnose.Restart) float64, limit bool) bool {
		for _, r := range rs {
			b, a := before(r), after(r)
			if math.IsNaN(b) || math.IsNaN(a) || a <= 0 || !(b >= climb*a || limit && r.MemLimit > 0 && b >= 0.9*r.MemLimit) {
				return false
			}
		}
		return true
	}
	return each(func(r diagnose.Restart) float64 { return r.RSSBefore }, func(r diagnose.Restart) float64 { return r.RSSAfter }, true) ||
		each(func(r diagnose.Restart) float64 { return r.GPUMemBefore }, func(r diagnose.Restart) float64 { return r.GPUMemAfter }, false)
}

func oomSuspect(rs []diagnose.Restart, climb float64) diagnose.Text {
	try := func(what string, before, after func(diagnose.Restart) float64) diagnose.Text {
		known, climbed := 0, 0
		lo, hi := math.NaN(), 0.0
		for _, r := range rs {
			b, a := before(r), after(r)
			if math.IsNaN(b) || math.IsNaN(a) || a <= 0 {
				continue
			}
			known++
			nearLimit := r.MemLimit > 0 && what == "resident memory" && b >= 0.9*r.MemLimit
			if b >= climb*a || nearLimit {
				climbed++
				lo, hi = diagnose.NaNMin(lo, a), max(hi, b)
			}
		}
		if known == 0 || climbed*2 <= known {
			return diagnose.Text{}
		}
		return say("%s climbed to %s before %d of %d restarts (%s after)", what, mib(hi), climbed, known, mib(lo))
	}
	if s := try("resident memory", func(r diagnose.Restart) float64 { return r.RSSBefore }, func(r diagnose.Restart) float64 { return r.RSSAfter }); !s.IsZero() {
		return s
	}
	return try("GPU memory", func(r diagnose.Restart) float64 { return r.GPUMemBefore }, func(r diagnose.Restart) float64 { return r.GPUMemAfter })
}
