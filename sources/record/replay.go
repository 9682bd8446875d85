package record

import (
	"errors"
	"fmt"
	"io"
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
}

// Item is one replayed event.
type Item struct {
	Kind   Kind
	Time   time.Time
	Index  int            // the target of a scrape or process tree
	Scrape sources.Scrape // KindScrape
	GPU    sources.GPUSnapshot
	Procs  sources.ProcTree
	Target Target // KindTarget, KindDeparted
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

// Next returns the next item; io.EOF after the last file's end, or the
// *Damage (or unfinished end) where reading stopped.
func (p *Replay) Next() (Item, error) {
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
			it.Scrape = p.scrape(ev)
		case KindGPU:
			it.GPU = ev.GPU
		case KindProcs:
			it.Procs = ev.Procs
		case KindTarget:
			it.Target = ev.TargetInfo
		case KindDeparted:
			it.Target = ev.TargetInfo
			delete(p.norms, ev.TargetInfo.Name)
		}
		return it, nil
	}
}

func isUnfinished(err error) bool {
	var d *Damage
	return errors.As(err, &d) && d.Unfinished
}

// scrape normalizes a recorded body exactly as the poller would have.
func (p *Replay) scrape(ev *Event) (s sources.Scrape) {
	name := p.cur.Header().Targets[ev.Target].Name
	s = sources.Scrape{Target: name, Time: ev.Time, Duration: ev.Duration}
	if ev.Err != "" {
		s.Err = errors.New(ev.Err)
		return s
	}
	n := p.norms[name]
	if n == nil {
		n = sources.NewNormalizer()
		n.MaxSamples = p.maxSamples
		p.norms[name] = n
	}
	defer func() {
		if r := recover(); r != nil {
			s = sources.Scrape{Target: name, Time: ev.Time, Err: fmt.Errorf("internal error reading %s: %v", name, r)}
			delete(p.norms, name) // its caches may be half-updated
		}
	}()
	snap, err := n.Normalize(ev.Body, ev.ContentType)
	if err != nil {
		s.Err = err
		return s
	}
	s.Data = snap
	return s
}

// Header returns the target table as it stands (the first header plus
// targets that arrived since), for naming targets of later items.
func (p *Replay) Targets() []Target { return p.cur.Header().Targets }
