package detect

import (
	"math"
	"slices"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// A replica whose arrivals exceed what it serves is sized in replicas by
// Little's law. That count assumed its peers as loaded as it is; a router
// that pins a tenant's sessions to one replica (sticky sessions, prefix
// affinity without a load bound) leaves the peers half idle, and "about 6
// replicas instead of 4" then adds hardware behind the same router while
// the queue stays where it is. The pool's own arrivals say which: summed
// over its members and set against what its engines serve at this
// replica's rate, they fill it or they do not.

// routingEnter and routingLeave bound the pool's fill (its arrivals over
// what it serves) for the router to be the limit: named at or below
// routingEnter, kept up to routingLeave once named. Between them a pool
// that was sized stays sized: spread evenly its replicas would run within
// 15 % of their capacity, no room to speak of.
const (
	routingEnter = 0.85
	routingLeave = 1.0
)

// poolLoad is a pool's arrivals against what it serves at one replica's
// rate.
type poolLoad struct {
	// fill is the pool's arrivals over its capacity, each member's
	// engines serving at the replica's rate.
	fill float64
	// arrivals is the pool's, req/s; peers how many members besides the
	// replica were read, peerRate their mean arrivals.
	arrivals float64
	peers    int
	peerRate float64
}

// poolFill sets the arrivals of the pool serving model against its
// capacity at ep's rate: own is ep's arrivals (finished plus the queue's
// growth), capacity what ep serves with its binding limit raised as far
// as the evidence allows. A member that is up but not read (too few
// points, or serving other models too, its rate not this model's) counts
// as loaded as ep, the premise sizing made before it read its peers, and
// so does one with no room of its own (noRoom); a member down serves
// nothing and takes no share.
func poolFill(x *evalCtx, ep *diagnose.EndpointView, model string, own, capacity float64) poolLoad {
	engines := func(e *diagnose.EndpointView) float64 { return float64(max(1, e.Stats.Engines)) }
	perEngine := capacity / engines(ep)
	ownPer := own / engines(ep)
	pl := poolLoad{arrivals: own}
	capSum := capacity
	for i := range x.f.Endpoints {
		e := &x.f.Endpoints[i]
		if e.Name == ep.Name || e.State != diagnose.StateUp || e.Kind != sources.KindEngine || !slices.Contains(e.Models, model) {
			continue
		}
		capSum += perEngine * engines(e)
		st, tr := &e.Stats, &e.Trend
		if len(e.Models) != 1 || bad(st.ReqRate) || tr.Points < minPoints || noRoom(e) {
			pl.arrivals += ownPer * engines(e)
			continue
		}
		a := st.ReqRate
		if !bad(tr.WaitSlope) && tr.WaitSlope > 0 {
			a += tr.WaitSlope
		}
		pl.arrivals += a
		pl.peerRate += a
		pl.peers++
	}
	if pl.peers > 0 {
		pl.peerRate /= float64(pl.peers)
	}
	pl.fill = pl.arrivals / capSum
	return pl
}

// noRoom says a peer has no capacity to take more: requests waited in
// its queue the whole window, its KV cache is full, or it holds requests
// and produces no token. Its room is not this replica's rate less its
// arrivals: a fleet of broken replicas (a stalled engine, a thrashing
// cache, another queue) read as a pool with room beside a failover's 10×.
func noRoom(e *diagnose.EndpointView) bool {
	st, tr := &e.Stats, &e.Trend
	return !bad(tr.WaitMin) && tr.WaitMin >= 1 ||
		!bad(st.KVUsage) && st.KVUsage >= kvFull ||
		!bad(st.Running) && st.Running >= 1 && !bad(st.GenTokRate) && st.GenTokRate <= 0
}

// routes says whether the router binds: the pool's arrivals, spread over
// it, fit with room (see routingEnter), its peers read.
func routes(pl poolLoad, reps int, prev diagnose.Limit) bool {
	if reps < 2 || pl.peers == 0 {
		return false
	}
	if prev == diagnose.LimitRouting {
		return pl.fill <= routingLeave
	}
	return pl.fill <= routingEnter
}

// routingWords is the queue's action under routing: what this replica
// gets against its peers, what the pool's arrivals fill of it at this
// replica's rate, and the router's fix.
func routingWords(x *evalCtx, u *unit, v *diagnose.Verdict) diagnose.Text {
	st, tr := u.st, &u.ep.Trend
	own := st.ReqRate + max(0, tr.WaitSlope)
	capacity := v.Served
	pl := poolFill(x, u.ep, u.model, own, capacity)
	s := say("the router binds, not capacity: this replica receives %s req/s (%s finished + the queue growing %s/s), its %d peers %s req/s on average; the pool's %s req/s at this replica's %s req/s served at its limit fill about %s of its %d replicas: route by outstanding requests (least-loaded, or prefix affinity with a load bound) rather than round-robin or sticky sessions; replicas added behind the same router would leave this queue where it is",
		num(own), num(st.ReqRate), num(max(0, tr.WaitSlope)), pl.peers, num(pl.peerRate), num(pl.arrivals), num(capacity), dec(pl.fill*float64(v.Now), 1), v.Now)
	if v.GaveUp > 0 {
		s = s.Add("; until it is, clients give up in this queue (%s of finished requests aborted, after queueing p95 %s): a queue cap or a wait deadline at the gateway sheds them before their timeout", pct(v.GaveUp), qsecs(&st.Queue, st.Queue.P95))
	}
	return s
}

// modelReplicas is how many endpoints of the fleet serve model (1 when
// the endpoint serves several or none is known).
func modelReplicas(x *evalCtx, model string) int {
	reps := 1
	if model != "" {
		for _, m := range x.f.Fleet.Models {
			if m.Model == model {
				reps = max(1, m.Endpoints)
			}
		}
	}
	return reps
}

// routedGivingUp: clients give up in a queue on a replica whose pool has
// room by what it served at its limit before they did (aborted requests
// finish without being served, so what it serves now sizes nothing):
// the router that sends it more than its share binds, the give-up share
// kept for the words.
func routedGivingUp(x *evalCtx, ep *diagnose.EndpointView, v *diagnose.Verdict, prev verdictMemo) {
	capacity, basis := prev.served, "served at its limit before clients gave up"
	if capacity <= 0 {
		// Opened on it: Little's law on the batch, the requests it
		// runs over the time each spends in the engine (prefill and
		// decode), is what it serves while it runs them.
		capacity, basis = batchRate(ep), "running ÷ time in the engine (prefill + decode)"
	}
	if bad(capacity) || capacity <= 0 {
		return
	}
	model := soleModel(ep)
	reps := modelReplicas(x, model)
	pl := poolFill(x, ep, model, ep.Stats.ReqRate+ep.Trend.WaitSlope, capacity)
	if !routes(pl, reps, prev.limit) {
		return
	}
	v.Limit, v.Now, v.ReplicasAt, v.Served = diagnose.LimitRouting, reps, float64(reps)*pl.fill, capacity
	v.Evidence = append(v.Evidence, evNum(basis, capacity, diagnose.UnitReqPerSec, 0),
		evNum("pool arrivals", pl.arrivals, diagnose.UnitReqPerSec, ep.Stats.Span), evNum("peers' arrivals (mean)", pl.peerRate, diagnose.UnitReqPerSec, ep.Stats.Span),
		evNum("pool fill at this replica's rate", pl.fill, diagnose.UnitRatio, ep.Stats.Span))
}

// routedThrashing: a KV cache thrashing on a replica whose arrivals
// exceed what it serves, in a pool with room at that rate (a thrashing
// cache serves less than it could: the pool's fill is over-, not
// under-estimated): the router binds, the cache under it.
func routedThrashing(x *evalCtx, ep *diagnose.EndpointView, v *diagnose.Verdict, prev verdictMemo, need, noise float64) {
	st, tr := &ep.Stats, &ep.Trend
	if need <= 1+noise {
		return
	}
	model := soleModel(ep)
	reps := modelReplicas(x, model)
	done := served(st)
	pl := poolFill(x, ep, model, st.ReqRate+tr.WaitSlope, done)
	if !routes(pl, reps, prev.limit) {
		return
	}
	v.Under, v.Limit = v.Limit, diagnose.LimitRouting
	v.Now, v.ReplicasAt, v.Served, v.Flag = reps, float64(reps)*pl.fill, done, nil
	v.Evidence = append(v.Evidence, evNum("arrivals ÷ served", need, diagnose.UnitNumber, st.Span), evNum("pool arrivals", pl.arrivals, diagnose.UnitReqPerSec, st.Span),
		evNum("peers' arrivals (mean)", pl.peerRate, diagnose.UnitReqPerSec, st.Span), evNum("pool fill at this replica's rate", pl.fill, diagnose.UnitRatio, st.Span))
}

// batchRate is the requests per second an engine completes at its
// current batch, by Little's law: the mean running over the mean time a
// request spends running (prefill and decode, V1's histograms); NaN when
// either is unknown over too few requests.
func batchRate(ep *diagnose.EndpointView) float64 {
	st, tr := &ep.Stats, &ep.Trend
	p, d := st.Prefill, st.Decode
	if bad(tr.RunMean) || tr.RunMean <= 0 || bad(p.Mean) || bad(d.Mean) || p.Count < minObs || d.Count < minObs || p.Mean+d.Mean <= 0 {
		return math.NaN()
	}
	return tr.RunMean / (p.Mean + d.Mean)
}
