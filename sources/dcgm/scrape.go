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
	// Found, when set, is the targets polled now (discovery's), joined
	// instead of Targets at every reading.
	Found *sources.TargetList
	// StaleFor bounds how long a failing exporter's devices stay in the
	// readings, stale with their last values: past it they are dropped, so
	// an exporter taken away leaves no ghosts. 0: StaleForDefault.
	StaleFor time.Duration
}

// StaleForDefault is how long a failing exporter's GPUs are kept stale.
const StaleForDefault = 10 * time.Minute

// Run reads until ctx ends.
func (s *Scraper) Run(ctx context.Context, out chan<- sources.Batch) error {
	r := NewReader()
	bufs := make([]bytes.Buffer, len(s.URLs))
	failing := make([]string, len(s.URLs)) // each exporter's error now, "" when it answers
	// Each exporter's devices when it last answered, and when: kept while
	// it fails, so its GPUs turn stale rather than vanish.
	last := make([][]Device, len(s.URLs))
	lastAt := make([]time.Time, len(s.URLs))
	staleFor := s.StaleFor
	if staleFor <= 0 {
		staleFor = StaleForDefault
	}
	from := make([]int, len(s.URLs)+1) // exporter i read devices from[i]..from[i+1]
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
			from[i] = r.count()
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
		from[len(s.URLs)] = r.count()
		if note := r.Refused(); note != "" {
			errs = append(errs, "dcgm-exporter: "+note)
		}
		targets := s.Targets
		if s.Found != nil {
			targets = s.Found.Get()
		}
		holders := make([]Holder, len(targets))
		for i, t := range targets {
			holders[i] = Holder{Host: t.Host, Namespace: t.Namespace, Pod: t.Pod}
		}
		var unread []string // the devices kept stale: their XID codes stand
		for i := range s.URLs {
			if fails[i] != nil {
				for k := range last[i] {
					unread = append(unread, last[i][k].Key())
				}
			}
		}
		r.holdXID(unread)
		devs, ev := r.End(now)
		devs = keepStale(devs, fails, from, last, lastAt, now, staleFor)
		fl := Fleet{Devices: devs, Events: ev}
		snap, held := fl.Snapshot(now, fmt.Sprintf("dcgm-exporter (%d endpoint%s)", len(s.URLs), plural(len(s.URLs))), holders)
		snap.Notes = errs
		if countErrs(fails) == len(s.URLs) && len(snap.GPUs) == 0 {
			snap.Unavailable = strings.Join(errs, "; ")
		}
		b := sources.Batch{Now: now, GPU: &snap, Problems: problems}
		for i, t := range targets {
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

// keepStale remembers the devices of each exporter that answered and adds
// those of each one failing, marked stale with their last values, until it
// has failed for longer than staleFor. A device another exporter reads now
// is not added twice.
func keepStale(devs []Device, fails []error, from []int, last [][]Device, lastAt []time.Time, now time.Time, staleFor time.Duration) []Device {
	have := map[string]bool{}
	for i := range devs {
		have[devs[i].Key()] = true
	}
	for i := range fails {
		if fails[i] == nil {
			last[i] = append(last[i][:0], devs[from[i]:from[i+1]]...)
			lastAt[i] = now
			continue
		}
		if last[i] == nil {
			continue
		}
		if now.Sub(lastAt[i]) > staleFor {
			last[i] = nil
			continue
		}
		for _, d := range last[i] {
			if have[d.Key()] {
				continue
			}
			have[d.Key()] = true
			d.Stale = true
			devs = append(devs, d)
		}
	}
	return devs
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
