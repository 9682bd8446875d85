package detect

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
)

// fleetHit is one fleet rule's verdict about one endpoint.
type fleetHit struct {
	ep    *diagnose.EndpointView
	model string
	c     cond
	sev   diagnose.Severity
	over  float64 // how far past the threshold (see evalCtx.over)
	peers []*diagnose.EndpointView
}

// replica_imbalance parameters, looked up by name: a check indexes its values
// through these.
var (
	riParams = params{
		{"factor", 2, "factor", "load over the peers' mean that counts as imbalance"},
		{"min_diff", 8, "count", "requests in flight above the peers' mean, at least"},
		{"clear", 1.3, "factor", "load over the peers' mean below which it clears"},
	}
	riFactor  = riParams.index("factor")
	riMinDiff = riParams.index("min_diff")
	riClear   = riParams.index("clear")
)

var ruleImbalance = &Rule{
	ID: "replica_imbalance", Title: "Replica imbalance", Scope: ScopeFleet,
	Catches:  "One replica much hotter than its peers serving the same model: the router (or session affinity) sends it more than its share, so its users wait while the others idle.",
	Needs:    "running and waiting gauges of every replica of a pool (two or more endpoints up); max_num_seqs (config) or cache_config_info for capacity",
	Cond:     "a replica's requests in flight (running + waiting) per unit of capacity (batch slots when every replica's max_num_seqs is configured, else KV tokens, else data-parallel engines) ≥ {factor} its peers' mean, and ≥ {min_diff} requests per engine more than that share would give it; replicas are compared within their configured pool, else with those serving the same model",
	Clear:    "its load < {clear} the peers' mean",
	Severity: "warning",
	Action:   "fix the balancing: least-outstanding-requests or prefix-aware routing instead of round-robin or sticky sessions; check the router's view of replica health",
	For:      3 * time.Minute, ResolveFor: 2 * time.Minute,
	Params: riParams,
	prom: func(g *promGen, p []float64) []promAlert {
		// Per data-parallel engine: count the engines reporting the gauge.
		load := fmt.Sprintf("((%s + %s) / count by (%s) (%s))", g.gauge(sources.GRunning, "sum", byEndpoint), g.gauge(sources.GWaiting, "sum", byEndpoint),
			byEndpoint, sources.FamilyName(sources.RoleGauge, uint8(sources.GRunning)))
		peers := fmt.Sprintf("((sum by (model_name) %s - on(model_name) group_right() %s) / on(model_name) group_left() (count by (model_name) %s - 1))", load, load, load)
		return []promAlert{{Severity: "warning", Expr: fmt.Sprintf("%s >= %s * %s and %s - %s >= %s",
			load, g.num(p[riFactor]), peers, load, peers, g.num(p[riMinDiff]))}}
	},
}

func init() {
	ruleImbalance.fleetCheck = imbalanceCheck
	ruleImbalance.describe = imbalanceDescribe
}

// capacityOf is how much a replica can carry, the same measure for every
// replica of a pool: its batch slots (max_num_seqs × engines) when every
// replica's is configured, else its KV capacity in tokens when every one
// reports it, else its data-parallel engines. unit names the measure.
func capacityOf(eps []*diagnose.EndpointView) (func(*diagnose.EndpointView) float64, string) {
	slots, kv := true, true
	for _, ep := range eps {
		slots = slots && diagnose.BatchSlots(ep.MaxNumSeqs, &ep.Stats) > 0
		kv = kv && !bad(ep.Stats.KVCapacityTokens) && ep.Stats.KVCapacityTokens > 0
	}
	switch {
	case slots:
		return func(ep *diagnose.EndpointView) float64 { return float64(diagnose.BatchSlots(ep.MaxNumSeqs, &ep.Stats)) }, "batch slot"
	case kv:
		return func(ep *diagnose.EndpointView) float64 { return ep.Stats.KVCapacityTokens / 100000 }, "100k KV tokens"
	}
	return func(ep *diagnose.EndpointView) float64 { return float64(max(ep.Stats.Engines, 1)) }, "engine"
}

// loadNum spells a load per capacity unit with the digits that matter:
// 0.47 and 58 as such, 1,173.13 as 1.2k.
func loadNum(v float64) diagnose.Value {
	switch {
	case v >= 100:
		return num(v)
	case v >= 10:
		return dec(v, 1)
	}
	return dec(v, 2)
}

// plural names a count of capacity units ("batch slots", "100k KV tokens").
func plural(unit string) string {
	if strings.HasSuffix(unit, "s") {
		return unit
	}
	return unit + "s"
}

// inFlight is a replica's requests running and waiting, NaN when unknown.
func inFlight(ep *diagnose.EndpointView) float64 {
	r, w := ep.Stats.Running, ep.Stats.Waiting
	if bad(r) || bad(w) {
		return math.NaN()
	}
	return r + w
}

// pools groups the replicas replica_imbalance compares: the pool named in
// the configuration, else the one model an endpoint serves.
func pools(f *diagnose.Frame) (keys []string, members map[string][]*diagnose.EndpointView) {
	members = map[string][]*diagnose.EndpointView{}
	for i := range f.Endpoints {
		ep := &f.Endpoints[i]
		if ep.State != diagnose.StateUp || ep.Kind != sources.KindEngine || bad(inFlight(ep)) {
			continue
		}
		key := ep.Pool
		if key == "" {
			if len(ep.Models) != 1 {
				continue
			}
			key = ep.Models[0]
		}
		if members[key] == nil {
			keys = append(keys, key)
		}
		members[key] = append(members[key], ep)
	}
	return keys, members
}

func imbalanceCheck(x *evalCtx, f *diagnose.Frame, p []float64) []fleetHit {
	var hits []fleetHit
	keys, members := pools(f)
	for _, key := range keys {
		eps := members[key]
		if len(eps) < 2 {
			continue
		}
		capOf, _ := capacityOf(eps)
		total := 0.0
		for _, ep := range eps {
			total += inFlight(ep) / capOf(ep)
		}
		for _, ep := range eps {
			c := capOf(ep)
			load := inFlight(ep) / c
			mean := (total - load) / float64(len(eps)-1)
			// Requests per data-parallel engine above what the peers'
			// share would give it: min_diff stays a per-engine count.
			excess := (inFlight(ep) - mean*c) / float64(max(ep.Stats.Engines, 1))
			h := fleetHit{ep: ep, model: key, peers: eps}
			switch {
			case load >= p[riFactor]*mean && excess >= p[riMinDiff]:
				h.c, h.sev = condMet, diagnose.SevWarning
				if mean > 0 {
					h.over = load / (p[riFactor] * mean)
				}
			case load < p[riClear]*mean || excess < p[riMinDiff]/2:
				h.c = condClear
			default:
				h.c = condHold
			}
			hits = append(hits, h)
		}
	}
	return hits
}

// peersListed is how many of the least and of the most loaded peers a
// replica_imbalance finding lists on a large pool.
const peersListed = 5

// poolLoads is a pool's load per unit of capacity, replica by replica,
// and their order, made once an evaluation for every replica_imbalance
// finding of the pool: each finding walking the whole pool for its mean,
// its capacity unit and the least and most loaded peers was quadratic in
// the pool (a ninth of --once's CPU at 2,000 replicas).
type poolLoads struct {
	eps   []*diagnose.EndpointView // the pool, as the check made it
	capOf func(*diagnose.EndpointView) float64
	unit  string
	load  []float64 // inFlight ÷ capOf, by index in eps
	order []int     // indices of eps, by load as a stable sort orders them
}

// poolOf is eps' poolLoads, made the first time a finding of the pool asks.
func (x *evalCtx) poolOf(eps []*diagnose.EndpointView) *poolLoads {
	if p := x.pool; p != nil && len(p.eps) == len(eps) && &p.eps[0] == &eps[0] {
		return p
	}
	p := &poolLoads{eps: eps, load: make([]float64, len(eps))}
	p.capOf, p.unit = capacityOf(eps)
	for i, o := range eps {
		p.load[i] = inFlight(o) / p.capOf(o)
	}
	p.order = rankLoads(p.load)
	x.pool = p
	return p
}

// rankLoads is the indices of loads in the order a stable sort by load
// gives them (cmp.Compare's order: NaN first; ties by index).
func rankLoads(loads []float64) []int {
	order := make([]int, len(loads))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(loads[a], loads[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return order
}

// extremesBut is the k first and the k last of order other than skip,
// in order.
func extremesBut(order []int, skip, k int) []int {
	lo := make([]int, 0, 2*k)
	for _, i := range order {
		if len(lo) == k {
			break
		}
		if i != skip {
			lo = append(lo, i)
		}
	}
	hi := make([]int, 0, k)
	for j := len(order) - 1; j >= 0 && len(hi) < k; j-- {
		if order[j] != skip {
			hi = append(hi, order[j])
		}
	}
	slices.Reverse(hi)
	return append(lo, hi...)
}

func imbalanceDescribe(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
	ep, eps := u.ep, x.peers
	pl := x.poolOf(eps)
	capOf, unit := pl.capOf, pl.unit
	load := inFlight(ep) / capOf(ep)
	me := slices.Index(eps, ep)
	s, n := 0.0, 0.0
	for i, l := range pl.load {
		if i != me {
			s += l
			n++
		}
	}
	mean := s / n
	fd.Summary = say("%s requests in flight per %s vs %s on average on its %d peers in %s", loadNum(load), unit, loadNum(mean), len(eps)-1, u.model)
	fd.Evidence = []diagnose.Evidence{evNum("in flight here", inFlight(ep), diagnose.UnitCount, 0), evNum("running here", ep.Stats.Running, diagnose.UnitCount, 0),
		evNum("waiting here", ep.Stats.Waiting, diagnose.UnitCount, 0), evNum("capacity here, "+plural(unit), capOf(ep), diagnose.UnitNumber, 0),
		evNum("per "+unit+" here", load, diagnose.UnitNumber, 0), evNum("peers' mean per "+unit, mean, diagnose.UnitNumber, 0), evQ("TTFT p95 here", &ep.Stats.TTFT, ep.Stats.TTFT.P95, ep.Stats.Span)}
	// Each peer's share, or on a large pool the least and the most loaded
	// few: every finding listing every peer is quadratic in the fleet
	// (2,000 replicas: half a gigabyte of evidence per evaluation).
	others := len(eps)
	if me >= 0 {
		others--
	}
	var peers []int
	if others > 2*peersListed {
		fd.Evidence = append(fd.Evidence, evNum("peers not listed", float64(others-2*peersListed), diagnose.UnitCount, 0))
		peers = extremesBut(pl.order, me, peersListed)
	} else {
		for i := range eps {
			if i != me {
				peers = append(peers, i)
			}
		}
	}
	for _, i := range peers {
		fd.Evidence = append(fd.Evidence, evNum("per "+unit+" on "+eps[i].Name, pl.load[i], diagnose.UnitNumber, 0))
	}
	fd.Explain = plain("Replicas of one pool should carry load in proportion to their capacity. This one carries several times its peers' share per unit of capacity, so its requests queue while they have room: the balancer's policy (round-robin with uneven request sizes or unequal replicas, sticky sessions) or its health view is off.")
	fd.Action = say("rebalance: route by outstanding requests (or prefix-aware) rather than round-robin or sticky sessions; at the peers' load this replica would carry about %s requests", num(mean*capOf(ep)))
}
