package detect

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// A process that is not the engine's on the engine's own GPU (someone's
// job, an embedding server, a notebook) has its kernels time-sliced with
// the engine's: every step waits for its share of the SMs, whatever
// vLLM's flags and the GPU's clocks. NVML lists it beside the engine's
// processes (dcgm-exporter does not list processes: there it is unseen).

// neighborMin is the GPU memory below which another process is not
// counted: monitoring tools hold a context of a few hundred MiB and run
// no kernels to speak of.
const neighborMin = 512 << 20

// neighbor is another process on one of an endpoint's GPUs.
type neighbor struct {
	gpu   string // its label: "GPU 0"
	pid   int
	name  string
	bytes float64
}

// neighbors lists the processes on ep's attributed GPUs that no endpoint
// of the frame runs, holding neighborMin or more, largest first.
func neighbors(x *evalCtx, ep *diagnose.EndpointView) []neighbor {
	if len(ep.GPU.GPUs) == 0 || ep.GPU.Stale {
		return nil
	}
	var out []neighbor
	for _, gi := range ep.GPU.GPUs {
		if gi < 0 || gi >= len(x.f.GPU.GPUs) {
			continue
		}
		g := &x.f.GPU.GPUs[gi]
		for _, p := range g.Processes {
			if math.IsNaN(p.UsedBytes) || p.UsedBytes < neighborMin || x.enginePID(p.PID) {
				continue
			}
			out = append(out, neighbor{gpu: g.Label(), pid: p.PID, name: p.Name, bytes: p.UsedBytes})
		}
	}
	slices.SortFunc(out, func(a, b neighbor) int { return cmp.Compare(b.bytes, a.bytes) })
	return out
}

// enginePID says some endpoint of the frame runs pid (made once an
// evaluation).
func (x *evalCtx) enginePID(pid int) bool {
	if x.pids == nil {
		x.pids = map[int]bool{}
		for i := range x.f.Endpoints {
			for _, p := range x.f.Endpoints[i].GPU.PIDs {
				x.pids[p] = true
			}
		}
	}
	return x.pids[pid]
}

// neighborWords names the neighbors: "python (pid 90000, 6 GiB) shares
// GPU 0".
func neighborWords(ns []neighbor) diagnose.Text {
	parts := make([]diagnose.Text, 0, len(ns))
	for _, n := range ns[:min(len(ns), 2)] {
		name := n.name
		if name == "" {
			name = "a process"
		}
		parts = append(parts, say("%s (pid %s, %s) shares %s", diagnose.Str(name), diagnose.Str(strconv.Itoa(n.pid)), diagnose.Value{Kind: diagnose.KindMem, Num: n.bytes}, diagnose.Str(n.gpu)))
	}
	s := diagnose.Join(parts, ", ")
	if len(ns) > 2 {
		s = s.Add(" and %d more", len(ns)-2)
	}
	return s
}

var ruleGPUNeighbor = &Rule{
	ID: "gpu_neighbor", Title: "Another process on its GPU", Scope: ScopeEndpoint,
	Catches:  "A process that is not an engine's runs on the endpoint's own GPU (someone's job, an embedding server, a notebook): its kernels are time-sliced with the engine's, and every step waits for its share, at full clocks, whatever vLLM's flags.",
	Needs:    "the endpoint's GPUs by its processes (NVML lists each GPU's processes; dcgm-exporter does not)",
	Cond:     "a process of no endpoint holds ≥ 512 MiB on one of the endpoint's GPUs; warning when tokens stream slower than the SLO's target (inter-token p95) or the decode speed per request fell, info otherwise",
	Clear:    "no such process on its GPUs",
	Severity: "warning when the engine slowed; info otherwise",
	Action:   "move the process off the serving GPU (or give the engine a GPU of its own: CUDA_VISIBLE_DEVICES, the pod's GPU request); nvidia-smi shows it by pid",
	For:      0, ResolveFor: 30 * time.Second,
	NoPromQL: "dcgm-exporter, what Prometheus scrapes, lists no GPU processes: only NVML on the node sees them",
	check: func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity) {
		if len(u.ep.GPU.GPUs) == 0 || u.ep.GPU.Stale {
			return condUnknown, 0
		}
		if len(neighbors(x, u.ep)) == 0 {
			return condClear, 0
		}
		if _, slowed := neighborSlowed(x, u); slowed {
			return condMet, diagnose.SevWarning
		}
		return condMet, diagnose.SevInfo
	},
	describe: func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
		ns := neighbors(x, u.ep)
		if len(ns) == 0 {
			fd.Summary = plain("its GPUs run only engines' processes again")
			return
		}
		fd.Summary = say("%s, beside the engine", neighborWords(ns))
		fd.Evidence = []diagnose.Evidence{evText("other processes", neighborWords(ns), 0), evQ("inter-token p95", &u.st.ITL, u.st.ITL.P95, u.st.Span)}
		fd.Explain = plain("A process that is not an engine's runs on this endpoint's GPU. Its kernels are time-sliced with the engine's: each engine step waits for the other's share of the SMs, so every request decodes slower at full clocks, and no vLLM flag wins that time back.")
		if why, slowed := neighborSlowed(x, u); slowed {
			fd.Summary = fd.Summary.Cat(plain("; ")).Cat(why)
			fd.Action = say("move %s off the serving GPU (or give the engine a GPU of its own: CUDA_VISIBLE_DEVICES, the pod's GPU request); nvidia-smi lists it by pid", diagnose.Str(ns[0].name))
			return
		}
		fd.Action = plain("the engine keeps its pace for now; if the process should not be on a serving GPU, move it (nvidia-smi lists it by pid)")
	},
}

// neighborSlowed says how the engine slowed beside its neighbor: the
// decode speed per request fell (an open change), or tokens stream slower
// than the SLO's pace.
func neighborSlowed(x *evalCtx, u *unit) (diagnose.Text, bool) {
	if s := decodeFell(u.ep); s != nil {
		return say("%s at %s", s.Words(), clock(s.Onset)), true
	}
	if over(&u.st.ITL, x.slo.ITL, 0.95) {
		return say("inter-token p95 %s over the %s target", qsecs(&u.st.ITL, u.st.ITL.P95), secs(x.slo.ITL.Seconds())), true
	}
	return diagnose.Text{}, false
}

// decodeFell is the open fall of the decode speed per request, nil when
// none.
func decodeFell(ep *diagnose.EndpointView) *diagnose.Shift {
	for i := range ep.Shifts {
		if s := &ep.Shifts[i]; s.Signal == diagnose.SigDecode && s.Ended.IsZero() && s.After < s.Before {
			return s
		}
	}
	return nil
}
