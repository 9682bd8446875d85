package report

import (
	"strconv"

	"github.com/vtop-dev/vtop/diagnose"
	f "github.com/vtop-dev/vtop/internal/format"
	"github.com/vtop-dev/vtop/sources"
)

// RouterLines say what a router holds per model (Dynamo's frontend) and
// the pool it is joined with: the workers up serving that model, whose
// queue is the router's. One line a model; none for a router that serves
// no queue.
func RouterLines(fr *diagnose.Frame, e *diagnose.EndpointView) []string {
	var out []string
	for _, r := range e.Router {
		l := r.Model + ": queued " + f.Count(r.Values[sources.RQueued]) + " · in flight " + f.Count(r.Values[sources.RInflight])
		pool := "no engine up serves it"
		for i := range fr.Fleet.Models {
			m := &fr.Fleet.Models[i]
			if m.Model == r.Model && len(m.Routers) > 0 {
				pool = "the pool's queue; its " + strconv.Itoa(m.Endpoints) + " engines run " + f.Count(m.Stats.Running)
			}
		}
		out = append(out, l+" · "+pool)
	}
	return out
}
