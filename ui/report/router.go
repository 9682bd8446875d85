package report

import (
	"math"
	"strconv"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	f "github.com/vtop-dev/vtop/ui/format"
)

// RouterLines say what a router holds per model (Dynamo's frontend) and
// the pool it is joined with: the workers up serving that model, whose
// queue is the router's. One line a model; none for a router that serves
// no queue.
func RouterLines(fr *diagnose.Frame, e *diagnose.EndpointView) []string {
	var out []string
	for _, r := range e.Router {
		l := r.Model + ": queued " + f.Count(r.Values[sources.RQueued]) + " · in flight " + f.Count(r.Values[sources.RInflight])
		if n := r.Values[sources.RMaxNumSeqs]; !math.IsNaN(n) {
			l += " · max_num_seqs " + f.Count(n) + " each"
		}
		pool := "no engine up serves it"
		for i := range fr.Fleet.Models {
			if m := &fr.Fleet.Models[i]; m.Model == r.Model {
				pool = "its " + strconv.Itoa(m.Endpoints) + " engines run " + f.Count(m.Stats.Running)
				if len(m.Routers) > 0 {
					pool = "the pool's queue; " + pool
				}
			}
		}
		out = append(out, l+" · "+pool)
	}
	return out
}
