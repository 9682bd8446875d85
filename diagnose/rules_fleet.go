package diagnose

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// fleetHit is one fleet rule's verdict about one endpoint.
type fleetHit struct {
	ep    *EndpointView
	model string
	c     cond
	sev   Severity
	over  float64 // how far past the threshold (see evalCtx.over)
	peers []*EndpointView
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
	Needs:    "running and waiting gauges of every replica of a model (two or more endpoints up)",
	Cond:     "a replica's requests in flight (running + waiting, per data-parallel engine) ≥ {factor} the mean of its peers' and ≥ {min_diff} more",
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

// replicaLoad is a replica's requests in flight per data-parallel engine
// (an endpoint with two engines carries twice the load of one), NaN when
// unknown.
func replicaLoad(ep *EndpointView) float64 {
	r, w := ep.Stats.Running, ep.Stats.Waiting
	if bad(r) || bad(w) {
		return math.NaN()
	}
	return (r + w) / float64(max(ep.Stats.Engines, 1))
}

func imbalanceCheck(x *evalCtx, f *Frame, p []float64) []fleetHit {
	var hits []fleetHit
	for _, m := range f.Fleet.Models {
		if m.Endpoints < 2 {
			continue
		}
		var eps []*EndpointView
		for i := range f.Endpoints {
			ep := &f.Endpoints[i]
			if ep.State == StateUp && ep.Kind == sources.KindEngine && len(ep.Models) == 1 && ep.Models[0] == m.Model && !bad(replicaLoad(ep)) {
				eps = append(eps, ep)
			}
		}
		if len(eps) < 2 {
			continue
		}
		total := 0.0
		for _, ep := range eps {
			total += replicaLoad(ep)
		}
		for _, ep := range eps {
			load := replicaLoad(ep)
			mean := (total - load) / float64(len(eps)-1)
			h := fleetHit{ep: ep, model: m.Model, peers: eps}
			switch {
			case load >= p[riFactor]*mean && load-mean >= p[riMinDiff]:
				h.c, h.sev, h.over = condMet, SevWarning, load/(p[riFactor]*mean)
			case load < p[riClear]*mean || load-mean < p[riMinDiff]/2:
				h.c = condClear
			default:
				h.c = condHold
			}
			hits = append(hits, h)
		}
	}
	return hits
}

func peersMean(ep *EndpointView, eps []*EndpointView) float64 {
	s, n := 0.0, 0.0
	for _, o := range eps {
		if o != ep {
			s += replicaLoad(o)
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / n
}

func imbalanceDescribe(x *evalCtx, u *unit, p []float64, sev Severity, fd *Finding) {
	ep := u.ep
	eps := x.peers
	mean := peersMean(ep, eps)
	load := replicaLoad(ep)
	fd.Summary = fmt.Sprintf("%s requests in flight per engine vs %s on average on its %d peers serving %s", num(load), num(mean), len(eps)-1, u.model)
	fd.Evidence = []Evidence{ev("in flight per engine here", fmt.Sprintf("%s (running %s, waiting %s, %d engines)", num(load), num(ep.Stats.Running), num(ep.Stats.Waiting), max(ep.Stats.Engines, 1)), 0),
		ev("peers' mean", num(mean), 0), ev("TTFT p95 here", qsecs(&ep.Stats.TTFT, ep.Stats.TTFT.P95), ep.Stats.Span)}
	others := slices.DeleteFunc(slices.Clone(eps), func(o *EndpointView) bool { return o == ep })
	var parts []string
	for _, o := range others {
		parts = append(parts, fmt.Sprintf("%s %s", o.Name, num(replicaLoad(o))))
	}
	fd.Evidence = append(fd.Evidence, ev("peers", strings.Join(parts, ", "), 0))
	fd.Explain = "Replicas of the same model should carry similar load. This one carries several times its peers' share, so its requests queue while they have room: the balancer's policy (round-robin with uneven request sizes, sticky sessions) or its health view is off."
	fd.Action = fmt.Sprintf("rebalance: route by outstanding requests (or prefix-aware) rather than round-robin or sticky sessions; at the peers' load this replica would carry about %s requests per engine", num(mean))
}
