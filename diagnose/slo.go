package diagnose

import (
	"fmt"
	"strings"
	"time"
)

// SLO is a set of latency targets for one kind of workload. The UI colours
// the latency row against it and the slo_breach rule checks it. Targets apply
// to the p95 of the window; p99 above twice the target is also a breach.
type SLO struct {
	Name string
	Desc string
	TTFT time.Duration // time to first token
	ITL  time.Duration // inter-token latency (time between tokens)
	E2E  time.Duration // end-to-end request latency
}

// SLOProfiles returns the built-in profiles. The targets are the usual ones
// for each use case (seeds: "latency targets by use case"); the config file
// can override any of them.
func SLOProfiles() []SLO {
	return []SLO{
		{Name: "chat", Desc: "interactive chat", TTFT: 500 * time.Millisecond, ITL: 50 * time.Millisecond, E2E: 10 * time.Second},
		{Name: "code", Desc: "code completion", TTFT: 200 * time.Millisecond, ITL: 30 * time.Millisecond, E2E: 3 * time.Second},
		{Name: "batch", Desc: "batch processing", TTFT: 5 * time.Second, ITL: 100 * time.Millisecond, E2E: 60 * time.Second},
		{Name: "rag", Desc: "RAG pipeline", TTFT: time.Second, ITL: 80 * time.Millisecond, E2E: 15 * time.Second},
		{Name: "agent", Desc: "agentic workflows", TTFT: 2 * time.Second, ITL: 100 * time.Millisecond, E2E: 30 * time.Second},
	}
}

// FindSLO returns the named profile among profiles.
func FindSLO(profiles []SLO, name string) (SLO, error) {
	var names []string
	for _, p := range profiles {
		if strings.EqualFold(p.Name, name) {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return SLO{}, fmt.Errorf("unknown SLO profile %q (have %s)", name, strings.Join(names, ", "))
}
