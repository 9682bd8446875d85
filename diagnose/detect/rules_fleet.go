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

// extremes is the k first and the k last of eps (more than 2k) as a stable
// sort by key would order them (cmp.Compare's order: NaN first), without
// sorting them all: every finding sorting its whole pool was a sixth of
// vtop's CPU for a 2,000-replica refresh.
func extremes(eps []*diagnose.EndpointView, key func(*diagnose.EndpointView) float64, k int) []*diagnose.EndpointView {
	type ranked struct {
		v float64
		i int
	}
	less := func(a, b ranked) bool {
		if c := cmp.Compare(a.v, b.v); c != 0 {
			return c < 0
		}
		return a.i < b.i
	}
	// keep inserts r into s, the best k so far in order of before.
	keep := func(s []ranked, r ranked, before func(a, b ranked) bool) []ranked {
		at := len(s)
		for at > 0 && before(r, s[at-1]) {
			at--
		}
		if at == k {
			return s
		}
		s = slices.Insert(s, at, r)
		return s[:min(len(s), k)]
	}
	lo, hi := make([]ranked, 0, k+1), make([]ranked, 0, k+1)
	for i, ep := range eps {
		r := ranked{key(ep), i}
		lo = keep(lo, r, less)
		hi = keep(hi, r, func(a, b ranked) bool { return less(b, a) })
	}
	out := make([]*diagnose.EndpointView, 0, 2*k)
	for _, r := range lo {
		out = append(out, eps[r.i])
	}
	for j := len(hi) - 1; j >= 0; j-- {
		out = append(out, eps[hi[j].i])
	}
	return out
}

func imbalanceDescribe(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding) {
	ep, eps := u.ep, x.peers
	capOf, unit := capacityOf(eps)
	load := inFlight(ep) / capOf(ep)
	s, n := 0.0, 0.0
	for _, o := range eps {
		if o != ep {
			s += inFlight(o) / capOf(o)
			n++
		}
	}
	mean := s / n
	fd.Summary = say("%s requests in flight per %s vs %s on average on its %d peers in %s", dec(load, 2), unit, dec(mean, 2), len(eps)-1, u.model)
	fd.Evidence = []diagnose.Evidence{evNum("in flight here", inFlight(ep), diagnose.UnitCount, 0), evNum("running here", ep.Stats.Running, diagnose.UnitCount, 0),
		evNum("waiting here", ep.Stats.Waiting, diagnose.UnitCount, 0), evNum("capacity here, "+plural(unit), capOf(ep), diagnose.UnitNumber, 0),
		evNum("per "+unit+" here", load, diagnose.UnitNumber, 0), evNum("peers' mean per "+unit, mean, diagnose.UnitNumber, 0), evQ("TTFT p95 here", &ep.Stats.TTFT, ep.Stats.TTFT.P95, ep.Stats.Span)}
	// Each peer's share, or on a large pool the least and the most loaded
	// few: every finding listing every peer is quadratic in the fleet
	// (2,000 replicas: half a gigabyte of evidence per evaluation).
	peers := make([]*diagnose.EndpointView, 0, len(eps)-1)
	for _, o := range eps {
		if o != ep {
			peers = append(peers, o)
		}
	}
	if len(peers) > 2*peersListed {
		fd.Evidence = append(fd.Evidence, evNum("peers not listed", float64(len(peers)-2*peersListed), diagnose.UnitCount, 0))
		peers = extremes(peers, func(o *diagnose.EndpointView) float64 { return inFlight(o) / capOf(o) }, peersListed)
	}
	for _, o := range peers {
		fd.Evidence = append(fd.Evidence, evNum("per "+unit+" on "+o.Name, inFlight(o)/capOf(o), diagnose.UnitNumber, 0))
	}
	fd.Explain = plain("Replicas of one pool should carry load in proportion to their capacity. This one carries several times its peers' share per unit of capacity, so its requests queue while they have room: the balancer's policy (round-robin with uneven request sizes or unequal replicas, sticky sessions) or its health view is off.")
	fd.Action = say("rebalance: route by outstanding requests (or prefix-aware) rather than round-robin or sticky sessions; at the peers' load this replica would carry about %s requests", num(mean*capOf(ep)))
}
