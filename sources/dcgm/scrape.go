package dcgm

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
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
	failing := make([]string, len(s.URLs)) // each exporter's error now, "" when it answers
	tick := time.NewTicker(s.Interval)
	defer tick.Stop()
	for {
		now := time.Now()
		r.Begin()
		// Every exporter at once: a hung one costs its own timeout, not
		// the healthy ones' turn. They are parsed in order afterwards.
		bodies := make([][]byte, len(s.URLs))
		fails := make([]error, len(s.URLs))
		var wg sync.WaitGroup
		for i, u := range s.URLs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				bodies[i], _, fails[i] = s.Fetcher.Fetch(ctx, u, &bufs[i])
			}()
		}
		wg.Wait()
		var errs []string
		var problems []sources.Problem
		for i, u := range s.URLs {
			// Each exporter is a source of its own: the header says which
			// one fails, since when, and why.
			text := ""
			if fails[i] != nil {
				text = exporterErr(fails[i])
			}
			if text != failing[i] {
				failing[i] = text
				problems = append(problems, sources.Problem{Key: "dcgm-exporter " + exporterName(u), Text: text, Fails: text != ""})
			}
			if fails[i] != nil {
				errs = append(errs, fmt.Sprintf("dcgm-exporter %s: %s", sources.ShowURL(u), text))
				continue
			}
			host := ""
			if pu, err := url.Parse(u); err == nil {
				host = pu.Hostname()
			}
			r.ParseText(bodies[i], host)
		}
		if note := r.Refused(); note != "" {
			errs = append(errs, "dcgm-exporter: "+note)
		}
		devs, ev := r.End(now)
		fl := Fleet{Devices: devs, Events: ev}
		snap, held := fl.Snapshot(now, fmt.Sprintf("dcgm-exporter (%d endpoint%s)", len(s.URLs), plural(len(s.URLs))), holders)
		snap.Notes = errs
		if countErrs(fails) == len(s.URLs) {
			snap.Unavailable = strings.Join(errs, "; ")
		}
		b := sources.Batch{Now: now, GPU: &snap, Problems: problems}
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

// exporterErr is a fetch error as said of an exporter: the fetcher's hint
// for a refused connection is about vLLM, whose targets it mostly reads.
func exporterErr(err error) string {
	t := strings.Replace(err.Error(), "(is vLLM running on this port?)", "(is dcgm-exporter running on this port?)", 1)
	return sources.Sanitize(t, 200)
}

// exporterName is how the header names an exporter: host:port when it
// is served at /metrics, as it is unless told otherwise, else its URL
// (query values redacted).
func exporterName(u string) string {
	pu, err := url.Parse(u)
	if err != nil || pu.Path != "/metrics" || pu.RawQuery != "" || pu.User != nil {
		return sources.ShowURL(u)
	}
	return sources.Sanitize(pu.Host, 80)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func countErrs(errs []error) int {
	n := 0
	for _, e := range errs {
		if e != nil {
			n++
		}
	}
	return n
}
