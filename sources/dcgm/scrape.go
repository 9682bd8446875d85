package dcgm

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// Scraper reads dcgm-exporter endpoints directly (direct mode, --dcgm) as
// a sources.Source: every interval one reading of all of them, joined to
// the targets by host (the exporter's Hostname label, or its own address).
type Scraper struct {
	URLs     []string
	Fetcher  *sources.Fetcher
	Interval time.Duration
	Targets  []sources.Target
}

// Run reads until ctx ends.
func (s *Scraper) Run(ctx context.Context, out chan<- sources.Batch) error {
	r := NewReader()
	bufs := make([]bytes.Buffer, len(s.URLs))
	holders := make([]Holder, len(s.Targets))
	for i, t := range s.Targets {
		holders[i] = Holder{Host: t.Host}
	}
	tick := time.NewTicker(s.Interval)
	defer tick.Stop()
	for {
		now := time.Now()
		r.Begin()
		var errs []string
		for i, u := range s.URLs {
			body, _, err := s.Fetcher.Fetch(ctx, u, &bufs[i])
			if err != nil {
				errs = append(errs, fmt.Sprintf("dcgm-exporter %s: %v", sources.Sanitize(u, 80), err))
				continue
			}
			host := ""
			if pu, err := url.Parse(u); err == nil {
				host = pu.Hostname()
			}
			r.ParseText(body, host)
		}
		devs, ev := r.End(now)
		fl := Fleet{Devices: devs, Events: ev}
		snap, held := fl.Snapshot(now, fmt.Sprintf("dcgm-exporter (%d endpoint%s)", len(s.URLs), plural(len(s.URLs))), holders)
		snap.Notes = errs
		if len(errs) == len(s.URLs) {
			snap.Unavailable = strings.Join(errs, "; ")
		}
		b := sources.Batch{Now: now, GPU: &snap}
		for i, t := range s.Targets {
			tr := sources.ProcTree{GPUs: held[i]}
			if len(held[i]) == 0 {
				tr.Note = "no dcgm-exporter GPU attributed to it (none on its host, or a host serving several replicas)"
			}
			b.Procs = append(b.Procs, sources.TargetProcs{Target: t.Name, Tree: tr})
		}
		if !sources.Send(ctx, out, b) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
