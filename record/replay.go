package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// Replay reads a recording (the files of a rotated one, oldest first) and
// hands out what the live pipeline ingested: scrapes normalized from their
// raw bodies by one Normalizer per target, as the poller does, GPU
// readings, process trees and evaluation ticks, in recorded order.
type Replay struct {
	paths      []string
	next       int
	cur        *Reader
	hdr        Header
	norms      map[string]*sources.Normalizer // by target name, across files
	maxSamples int
	free       [][]byte // body buffers parsed and done with, for nextRaw to reuse
}

// Item is one replayed event.
type Item struct {
	Kind    Kind
	Time    time.Time
	Index   int            // the target of a scrape or process tree
	Scrape  sources.Scrape // KindScrape
	GPU     sources.GPUSnapshot
	Procs   sources.ProcTree
	Target  Target          // KindTarget, KindDeparted
	Run     []byte          // KindRun
	Problem sources.Problem // KindProblem
}

// OpenReplay opens the first file and reads its header; maxSamples bounds
// each scrape like --max-samples (0: the default).
func OpenReplay(paths []string, maxSamples int) (*Replay, error) {
	if len(paths) == 0 {
		return nil, errors.New("no recording file")
	}
	if maxSamples <= 0 {
		maxSamples = sources.DefaultMaxSamples
	}
	p := &Replay{paths: paths, maxSamples: maxSamples}
	if err := p.openNext(); err != nil {
		return nil, err
	}
	p.hdr = p.cur.Header()
	p.norms = map[string]*sources.Normalizer{}
	return p, nil
}

func (p *Replay) openNext() error {
	r, err := Open(p.paths[p.next])
	if err != nil {
		return err
	}
	if p.cur != nil {
		// A rotated file's header lists the targets present when it began.
		prev, h := p.cur.Header(), r.Header()
		if h.Part <= prev.Part || !h.Started.Equal(prev.Started) {
			r.Close()
			return fmt.Errorf("%s does not continue %s (another recording, or not a later part)", p.paths[p.next], p.paths[p.next-1])
		}
		p.cur.Close()
	}
	p.cur = r
	p.next++
	return nil
}

// Header is the first file's header.
func (p *Replay) Header() Header { return p.hdr }

// Close releases the open file.
func (p *Replay) Close() error { return p.cur.Close() }

// nextRaw is the next item with a scrape's body copied into Scrape.Body, not parsed.
func (p *Replay) nextRaw() (Item, error) {
	for {
		ev, err := p.cur.Next()
		if err == io.EOF || (err != nil && isUnfinished(err) && p.next < len(p.paths)) {
			if p.next == len(p.paths) {
				return Item{}, io.EOF
			}
			if err := p.openNext(); err != nil {
				return Item{}, err
			}
			continue
		}
		if err != nil {
			return Item{}, err
		}
		it := Item{Kind: ev.Kind, Time: ev.Time, Index: ev.Target}
		switch ev.Kind {
		case KindScrape:
			name := p.cur.Header().Targets[ev.Target].Name
			it.Scrape = sources.Scrape{Target: name, Time: ev.Time, Duration: ev.Duration}
			if ev.Err != "" {
				it.Scrape.Err = errors.New(ev.Err)
			} else {
				// The reader reuses ev.Body: a copy, in a buffer an earlier
				// tick's parse gave back (60 KB a scrape is most of the
				// garbage a replay would make).
				var buf []byte
				if n := len(p.free); n > 0 {
					buf, p.free = p.free[n-1][:0], p.free[:n-1]
				}
				it.Scrape.Body, it.Scrape.ContentType = append(buf, ev.Body...), ev.ContentType
			}
		case KindGPU:
			it.GPU = ev.GPU
		case KindProcs:
			it.Procs = ev.Procs
		case KindTarget:
			it.Target = ev.TargetInfo
		case KindDeparted:
			it.Target = ev.TargetInfo
			delete(p.norms, ev.TargetInfo.Name)
		case KindRun:
			it.Run = bytes.Clone(ev.Body)
		case KindProblem:
			it.Problem = ev.Problem
		}
		return it, nil
	}
}

func isUnfinished(err error) bool {
	var d *Damage
	return errors.As(err, &d) && d.Unfinished
}

// maxFree bounds the body buffers kept for reuse: a tick's worth of a
// large fleet.
const maxFree = 4096

// parse normalizes recorded bodies exactly as the poller does, with one
// Normalizer per target. Targets are independent, so their scrapes are
// parsed in parallel (a target's own in order): parsing is most of a
// replay's work. The bodies' buffers are kept for reuse (a Normalizer
// keeps no reference to a body).
func (p *Replay) parse(ss []*sources.Scrape) {
	byTarget := map[string][]*sources.Scrape{}
	var order []string
	for _, s := range ss {
		if s.Err != nil || s.Data != nil {
			continue
		}
		if len(p.free) < maxFree {
			p.free = append(p.free, s.Body)
		}
		if _, ok := byTarget[s.Target]; !ok {
			order = append(order, s.Target)
			if p.norms[s.Target] == nil {
				n := sources.NewNormalizer()
				n.MaxSamples = p.maxSamples
				p.norms[s.Target] = n
			}
		}
		byTarget[s.Target] = append(byTarget[s.Target], s)
	}
	broken := make([]bool, len(order))
	work := func(k int) {
		n := p.norms[order[k]]
		for _, s := range byTarget[order[k]] {
			if !normalize(n, s) {
				broken[k] = true
				n = sources.NewNormalizer() // its caches may be half-updated
				n.MaxSamples = p.maxSamples
			}
		}
	}
	if len(order) == 1 {
		work(0)
	} else {
		var wg sync.WaitGroup
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		for k := range order {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				work(k)
			}()
		}
		wg.Wait()
	}
	for k, b := range broken {
		if b {
			delete(p.norms, order[k])
		}
	}
}

// normalize parses s.Body into s.Data (or s.Err); false when the parser
// panicked, as the poller's scrapeOnce recovers.
func normalize(n *sources.Normalizer, s *sources.Scrape) (ok bool) {
	body, ct := s.Body, s.ContentType
	s.Body = nil
	defer func() {
		if r := recover(); r != nil {
			s.Data, s.Err = nil, fmt.Errorf("internal error reading %s: %v", s.Target, r)
			ok = false
		}
	}()
	snap, err := n.Normalize(body, ct)
	s.Data, s.Err = snap, err
	if err != nil {
		s.Data = nil
	}
	return true
}

// Targets returns the target table as it stands (the open file's header
// plus targets that arrived since), for naming targets of later items.
func (p *Replay) Targets() []Target { return p.cur.Header().Targets }
