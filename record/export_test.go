package record

import (
	"io"

	"github.com/vtop-dev/vtop/sources"
)

// The binary replays in batches (nextRaw, then parse) and records to files
// (Create); the tests read and write one item at a time, in memory.

// Next returns the next item; io.EOF after the last file's end, or the
// *Damage (or unfinished end) where reading stopped.
func (p *Replay) Next() (Item, error) {
	it, err := p.nextRaw()
	if err == nil && it.Kind == KindScrape && it.Scrape.Err == nil {
		p.parse([]*sources.Scrape{&it.Scrape})
	}
	return it, err
}

// NewWriter writes one unrotated recording to out.
func NewWriter(out io.Writer, hdr Header, targets []sources.Target) (*Writer, error) {
	w := &Writer{out: out}
	hdr.Targets = Targets(targets)
	if err := w.start(hdr); err != nil {
		return nil, err
	}
	w.indexNames(targets)
	return w, nil
}
