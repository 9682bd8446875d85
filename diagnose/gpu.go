package diagnose

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// NoteNotLocal is the join note of an endpoint on another host: its GPUs
// are not this machine's.
const NoteNotLocal = sources.NoteNotLocal

// gpuState is the engine's GPU side: the latest snapshot, a bounded
// history per GPU and the recent XID events.
type gpuState struct {
	snap   sources.GPUSnapshot
	seen   bool
	series map[string]*gpuSeries // by UUID (or index when the UUID is unknown)
	events []sources.GPUEvent    // oldest first, within XIDRetention
}

type gpuSeries struct {
	GPUSeries
	ring     gpuRing
	lastSeen time.Time
}

// endpointGPU is one endpoint's process tree and its join to the GPUs.
type endpointGPU struct {
	tree   sources.ProcTree
	set    bool
	joined EndpointGPU
	held   map[string]bool // UUIDs its processes held at the last join
	ring   gpuRing
}

func gpuKey(g *sources.GPU) string {
	if g.UUID != "" {
		return g.UUID
	}
	return fmt.Sprintf("index:%d", g.Index)
}

// IngestGPU applies one GPU reading: history per GPU, the XID events, and
// each local endpoint's share. Times come with the snapshot.
func (e *Engine) IngestGPU(s sources.GPUSnapshot) {
	st := &e.gpu
	if st.series == nil {
		st.series = map[string]*gpuSeries{}
	}
	st.snap, st.seen = s, true
	for i := range s.GPUs {
		g := &s.GPUs[i]
		k := gpuKey(g)
		h := st.series[k]
		if h == nil {
			h = &gpuSeries{ring: gpuRing{max: e.cfg.GPUMaxPoints, retain: e.gpuRetention()}}
			st.series[k] = h
		}
		h.Index, h.UUID, h.Name, h.lastSeen = g.Index, g.UUID, g.Name, s.Time
		if g.Stale {
			// Its source fails: these are the last values again, no new
			// point; the series keeps its last real ones.
			continue
		}
		p := NewGPUPoint(s.Time, g)
		h.ring.retain = e.gpuRetention()
		h.ring.push(p)
		h.Points = h.ring.pts
		switch {
		case !p.Throttled():
			h.ThrottledSince, h.ThrottleReasons = time.Time{}, 0
		case h.ThrottledSince.IsZero():
			h.ThrottledSince, h.ThrottleReasons = s.Time, p.ClockEvents&sources.ClockThrottle
		default:
			h.ThrottleReasons |= p.ClockEvents & sources.ClockThrottle
		}
	}
	for k, h := range st.series {
		if s.Time.Sub(h.lastSeen) > e.gpuRetention() {
			delete(st.series, k)
		}
	}
	st.events = append(st.events, s.Events...)
	cut := 0
	for cut < len(st.events) && (s.Time.Sub(st.events[cut].Time) > e.cfg.XIDRetention || len(st.events)-cut > maxGPUEvents) {
		cut++
	}
	if cut > 0 {
		st.events = append([]sources.GPUEvent(nil), st.events[cut:]...)
	}
	for _, ep := range e.eps {
		if !ep.gpu.set {
			continue
		}
		e.joinGPU(ep)
		if len(ep.gpu.joined.GPUs) > 0 && !ep.gpu.joined.Stale {
			ep.gpu.ring.retain = e.gpuRetention()
			ep.gpu.ring.push(endpointPoint(&st.snap, &ep.gpu.joined))
			ep.gpu.joined.Hist = ep.gpu.ring.pts
		}
	}
}

// maxGPUEvents bounds the kept XID events: a storm must not grow memory.
const maxGPUEvents = 512

func (e *Engine) gpuRetention() time.Duration {
	return max(e.cfg.GPURetention, 2*e.cfg.Window)
}

// SetEndpointProcs sets the process tree serving target i (from the port →
// PID join; a Note when there is none, e.g. "not on this host"). The GPU
// share is joined now and at every IngestGPU.
func (e *Engine) SetEndpointProcs(i int, t sources.ProcTree) {
	if i < 0 || i >= len(e.eps) {
		return
	}
	ep := e.eps[i]
	if ep.gpu.ring.max == 0 {
		ep.gpu.ring = gpuRing{max: e.cfg.GPUMaxPoints, retain: e.gpuRetention()}
	}
	ep.gpu.tree, ep.gpu.set = t, true
	e.joinGPU(ep)
}

// joinGPU attaches to an endpoint the GPUs and GPU memory its processes
// hold. A GPU it held that is now lost stays attached: that is the moment
// the endpoint's operator needs to know.
func (e *Engine) joinGPU(ep *endpoint) {
	t, snap := &ep.gpu.tree, &e.gpu.snap
	j := EndpointGPU{MemBytes: math.NaN(), UtilGPU: math.NaN(), Root: t.Root, RootName: t.RootName, PIDs: t.PIDs,
		Hist: ep.gpu.ring.pts, MemLimit: t.MemLimit, MemLimitFrom: t.MemLimitFrom}
	defer func() {
		for _, gi := range j.GPUs {
			j.Stale = j.Stale || snap.GPUs[gi].Stale
		}
		ep.gpu.joined = j
	}()
	switch {
	case t.Note != "":
		j.Note = t.Note
		return
	case !e.gpu.seen:
		j.Note = "no GPU reading yet"
		return
	case snap.Unavailable != "":
		j.Note = "no GPU data: " + snap.Unavailable
		return
	}
	pids := make(map[int]bool, len(t.PIDs))
	for _, p := range t.PIDs {
		pids[p] = true
	}
	remote := make(map[string]bool, len(t.GPUs))
	for _, k := range t.GPUs {
		remote[k] = true
	}
	held := map[string]bool{}
	mem, memKnown, procs := 0.0, true, 0
	var sick []string
	for gi := range snap.GPUs {
		g := &snap.GPUs[gi]
		on := g.Problem != "" && ep.gpu.held[gpuKey(g)]
		if on {
			sick = append(sick, g.Label()+": "+g.Problem)
		}
		if remote[g.UUID] {
			on = true
			procs++
			if math.IsNaN(g.MemUsed) {
				memKnown = false
			} else {
				mem += g.MemUsed
			}
		}
		for _, p := range g.Processes {
			if !pids[p.PID] {
				continue
			}
			on = true
			procs++
			if math.IsNaN(p.UsedBytes) {
				memKnown = false
			} else {
				mem += p.UsedBytes
			}
		}
		if on {
			j.GPUs = append(j.GPUs, gi)
			held[gpuKey(g)] = true
		}
	}
	ep.gpu.held = held
	switch {
	case len(sick) > 0:
		// What the endpoint held on a lost GPU is unknown, so is its total.
		j.Note = strings.Join(sick, "; ")
	case procs == 0 && len(j.GPUs) == 0:
		j.Note = fmt.Sprintf("its processes (%s, PID %d, %d in all) hold no GPU memory", t.RootName, t.Root, len(t.PIDs))
		if t.RootName == "docker-proxy" {
			j.Note += "; the port is forwarded into a container"
		}
		for _, n := range snap.Notes {
			if strings.Contains(n, "PID namespace") || strings.Contains(n, "container") {
				j.Note += "; " + n
				break
			}
		}
	case memKnown:
		j.MemBytes = mem
	default:
		j.Note = "the driver does not report per-process GPU memory here"
	}
	j.UtilGPU = endpointPoint(snap, &j).UtilGPU
}

// endpointPoint sums an endpoint's GPUs into one reading.
func endpointPoint(snap *sources.GPUSnapshot, j *EndpointGPU) GPUPoint {
	p := GPUPoint{Time: snap.Time, MemUsed: j.MemBytes, MemTotal: math.NaN(), TempC: math.NaN(), PowerW: math.NaN()}
	gpus := make([]GPUPoint, 0, len(j.GPUs))
	for _, gi := range j.GPUs {
		g := NewGPUPoint(snap.Time, &snap.GPUs[gi])
		gpus = append(gpus, g)
		p.MemTotal = nanAdd(p.MemTotal, g.MemTotal)
		p.TempC = NaNMax(p.TempC, g.TempC)
		p.PowerW = nanAdd(p.PowerW, g.PowerW)
		p.ClockEvents |= g.ClockEvents
		p.Lost = p.Lost || g.Lost
	}
	p.UtilGPU = GPUMean(gpus, func(q GPUPoint) float64 { return q.UtilGPU })
	p.UtilMem = GPUMean(gpus, func(q GPUPoint) float64 { return q.UtilMem })
	return p
}

// gpuFrame fills the frame's GPU side.
func (e *Engine) gpuFrame(f *Frame) {
	st := &e.gpu
	f.GPU = st.snap
	f.GPUEvents = st.events
	f.GPUSeries = make([]GPUSeries, len(st.snap.GPUs))
	for i := range st.snap.GPUs {
		if h := st.series[gpuKey(&st.snap.GPUs[i])]; h != nil {
			f.GPUSeries[i] = h.GPUSeries
		}
	}
}
