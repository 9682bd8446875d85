package sources

import (
	"bytes"
	"hash/maphash"
	"io"
	"sync"

	"github.com/prometheus/prometheus/model/textparse"
)

// Incremental normalizing: from one scrape to the next a target's body keeps
// its lines in the same order and changes numbers (on a busy engine about
// two thirds of its samples a second, mostly histogram buckets), so the
// Normalizer keeps a 64-bit hash per line of the previous body (not the
// body) and, per sample line, the class its series resolved to (shared with
// other targets: classes.go) and its value. Only lines whose hash changed
// are given to the parser again, and only what follows their series; every
// line's sample is then applied in body order exactly as a full parse
// applies it, so the snapshot is the same. Anything else about the body
// changing (its line count, a HELP/TYPE/comment line, a line that was not
// a sample, the Content-Type, a line's series text) takes the full parse.
//
// Why a line may be parsed alone: both text parsers start every entry at a
// line start in their initial state, and a sample whose series holds no
// newline ends with its own line (value, timestamp and exemplar tokens hold
// none). After a series the lexer is in the same state whatever the series
// was, so "x" and the rest of the line lex as the rest of the line does.
// Label parsing does depend on the preceding TYPE (le/quantile values are
// normalized for histograms), so a changed line is only taken when its
// series is unchanged: labels are never read on this path.

// lineSeed keys the line and series hashes. Random per process, so a target
// cannot craft two lines or series with the same hash to have vtop take one
// for the other.
var lineSeed = maphash.MakeSeed()

// seriesKey identifies a raw series (the text before the value) among classes.
func seriesKey(series []byte) uint64 { return maphash.Bytes(lineSeed, series) }

// maxPrintLines bounds the lines fingerprinted per target: a hostile 16 MiB
// body of newlines must not cost 24 bytes a line. Beyond it, full parses.
const maxPrintLines = 1 << 18

// bodyPrint is what a Normalizer remembers of its target's previous body:
// 24 bytes a line (~17 KB for a 700-line vLLM body).
type bodyPrint struct {
	have bool     // hash describes the previous body
	hash []uint64 // per '\n'-separated line
	ent  []*class // the class of the line's series; nil for a line without a sample
	val  []float64
	dups []int32 // lines whose series an earlier line has (ignored, counted), ascending
	// reuse: the previous body parsed cleanly (Prometheus text or
	// OpenMetrics) and no sample spanned lines, so its results may be reused.
	reuse    bool
	om       bool // parsed as OpenMetrics (a changed line is parsed before "# EOF")
	ct       string
	declared int // what its HELP and TYPE lines said
	help     Gen

	// The current body against the previous one.
	prevN     int     // lines of the previous body; -1 when there is none
	changed   []int32 // lines whose hash differs (or that are new), ascending
	changedAt []int32 // their start and end offsets in the body, two per line
	ends      []int32 // where each line of the body ends ('\n' or its length): the tracker's lines
	// lists holds changed and changedAt while the normalizer reads the
	// body, and after it only for a normalizer whose caller records the
	// changes (keepLines, see Changes): pooled, not kept per target
	// between scrapes (1,000 targets held 7.5 MB of them).
	lists  *changeLists
	listed bool // changed and changedAt describe the body last read

	sameOK bool // the body was read incrementally: its changed lines kept their series
	sc     *changedScratch
}

// changedScratch is what reading a body's changed lines needs only while it
// runs: pooled, not kept per target (1,000 targets held ~9 MB of it between
// their scrapes).
type changedScratch struct {
	mini []byte // what follows the series of the changed lines, to parse
	val  []float64
}

var changedPool = sync.Pool{New: func() any { return new(changedScratch) }}

type changeLists struct{ changed, at, ends []int32 }

var listsPool = sync.Pool{New: func() any { return new(changeLists) }}

// releaseLists gives the changed-line lists back: nothing reads them
// before the next rehash.
func (f *bodyPrint) releaseLists() {
	cl := f.lists
	if cl == nil {
		return
	}
	f.lists, f.listed = nil, false
	cl.changed, cl.at, cl.ends = f.changed[:0], f.changedAt[:0], f.ends[:0]
	f.changed, f.changedAt, f.ends = nil, nil, nil
	if cap(cl.at) > 16<<10 || cap(cl.ends) > 64<<10 {
		cl.changed, cl.at, cl.ends = nil, nil, nil // a body whose every line changed, a huge one: not pooled for good
	}
	listsPool.Put(cl)
}

// releaseScratch gives the scratch back, holding no entry alive.
func (f *bodyPrint) releaseScratch() {
	sc := f.sc
	f.sc = nil
	sc.mini, sc.val = sc.mini[:0], sc.val[:0]
	if cap(sc.mini) > 16<<10 {
		sc.mini = nil // a body whose every line changed: not pooled for good
	}
	changedPool.Put(sc)
}

// rehash fingerprints body, noting which lines changed since the previous one.
func (f *bodyPrint) rehash(body []byte) {
	if f.lists == nil {
		f.lists = listsPool.Get().(*changeLists)
		f.changed, f.changedAt, f.ends = f.lists.changed, f.lists.at, f.lists.ends
	}
	f.listed = true
	f.changed, f.changedAt, f.ends = f.changed[:0], f.changedAt[:0], f.ends[:0]
	f.sameOK = false
	f.prevN = -1
	if f.have {
		f.prevN = len(f.hash)
	}
	lines := bytes.Count(body, []byte{'\n'}) + 1
	if lines > maxPrintLines || len(body) > 1<<31-1 {
		f.forget()
		return
	}
	old := len(f.hash)
	if !f.have {
		old = 0
	}
	if cap(f.hash) < lines || cap(f.hash) > 4*lines+1024 {
		// Grown for a body far larger than this one: give the memory back.
		h := make([]uint64, old, lines)
		copy(h, f.hash[:old])
		f.hash = h
	}
	f.hash = f.hash[:lines]
	at := 0
	for k := 0; k < lines; k++ {
		end := len(body)
		if i := bytes.IndexByte(body[at:], '\n'); i >= 0 {
			end = at + i
		}
		f.ends = append(f.ends, int32(end))
		h := maphash.Bytes(lineSeed, body[at:end])
		if k >= old || f.hash[k] != h {
			f.hash[k] = h
			// With no previous body every line is new and nothing reads
			// the list: a fleet's first bodies keep 12 bytes a line less.
			if f.prevN >= 0 {
				f.changed = append(f.changed, int32(k))
				f.changedAt = append(f.changedAt, int32(at), int32(end))
			}
		}
		at = end + 1
	}
	f.have = true
}

// line is the i-th changed line of body (rehashed last), without its '\n'.
func (f *bodyPrint) line(body []byte, i int) []byte {
	return body[f.changedAt[2*i]:f.changedAt[2*i+1]]
}

// forget drops the fingerprint: the next body is compared with nothing and
// parsed in full.
func (f *bodyPrint) forget() {
	f.have, f.reuse = false, false
	if cap(f.hash) > 4096 {
		f.hash, f.ent, f.val = nil, nil, nil
	}
	clear(f.ent[:cap(f.ent)]) // keeps no class alive
	f.hash, f.ent, f.val, f.dups = f.hash[:0], f.ent[:0], f.val[:0], f.dups[:0]
}

// tracker maps the entries of a full parse to the lines of the body.
type tracker struct {
	on        bool
	body      []byte
	k         int // line of the cursor
	start     int // its start offset
	end       int // its end ('\n' or len(body))
	lastEntry int // line of the last sample, -1 before the first
	// prev: the lines' classes not yet reached are the previous body's,
	// resolved by this parser (see prevClass).
	prev bool
	// unique: prev, and no series of the previous body repeated an
	// earlier line's. While every sample so far took its line's previous
	// class, no two of them can share a series, so the set of series seen
	// (for repeats) need not be kept until one does not (read).
	unique bool
}

// startTrack prepares a full parse of body to record each line's sample.
func (n *Normalizer) startTrack(p textparse.Parser, body []byte, ct string) {
	switch p.(type) {
	case *textparse.PromParser:
		n.startTrackText(false, body, ct)
	case *textparse.OpenMetricsParser:
		n.startTrackText(true, body, ct)
	default:
		n.trk = tracker{}
		n.fp.reuse = false
	}
}

// startTrackText prepares a full read of a text body (om: OpenMetrics).
// The classes the previous body's lines resolved to stay in place until
// this body's lines replace them: a line whose series is the one its
// line had before takes that class without a lookup (prevClass).
func (n *Normalizer) startTrackText(om bool, body []byte, ct string) {
	f := &n.fp
	n.trk = tracker{}
	prev := f.reuse && f.om == om
	f.om = om
	if !f.have {
		f.reuse = false
		return
	}
	lines := len(f.hash)
	if cap(f.ent) < lines || cap(f.ent) > 4*lines+1024 {
		f.ent, f.val = make([]*class, lines), make([]float64, lines)
		prev = false
	}
	unique := prev && len(f.dups) == 0
	f.ent, f.val, f.dups = f.ent[:lines], f.val[:lines], f.dups[:0]
	if prev {
		clear(f.ent[lines:cap(f.ent)])
	} else {
		clear(f.ent[:cap(f.ent)])
	}
	f.reuse, f.ct = true, ct
	n.trk = tracker{on: true, body: body, end: int(f.ends[0]), lastEntry: -1, prev: prev, unique: unique}
}

// locate is the line of a sample whose series is series, or -1 (and the
// body's results unusable for the next scrape) when it does not start a
// line of its own after the previous sample's, or spans lines. The lines
// it passes hold no sample.
func (n *Normalizer) locate(series []byte) int {
	t := &n.trk
	if !t.on {
		return -1
	}
	off := cap(t.body) - cap(series)
	if len(series) == 0 || off < 0 || off >= len(t.body) || &t.body[off] != &series[0] {
		t.on, n.fp.reuse = false, false
		return -1
	}
	ends := n.fp.ends
	for off > t.end && t.k+1 < len(ends) {
		if t.k != t.lastEntry {
			n.fp.ent[t.k] = nil
		}
		t.k++
		t.start = t.end + 1
		t.end = int(ends[t.k])
	}
	if off != t.start || off+len(series) > t.end || t.k == t.lastEntry || t.k >= len(n.fp.ent) {
		t.on, n.fp.reuse = false, false
		return -1
	}
	return t.k
}

// prevClass is the class line k's series had in the previous body, when
// this series is that one (the same hash and length, as readChanged
// takes a changed line's): nil otherwise.
func (n *Normalizer) prevClass(k int, series []byte, key uint64) *class {
	if k < 0 || !n.trk.prev {
		return nil
	}
	if c := n.fp.ent[k]; c != nil && c.key == key && int(c.slen) == len(series) {
		return c
	}
	return nil
}

// record notes line k's sample (k from locate; -1: not tracked): its
// class, its value, and whether an earlier line had its series.
func (n *Normalizer) record(k int, en *class, dup bool, v float64) {
	if k < 0 || !n.trk.on {
		return
	}
	n.trk.lastEntry = k
	n.fp.ent[k], n.fp.val[k] = en, v
	if dup {
		n.fp.dups = append(n.fp.dups, int32(k))
	}
}

// track locates and records a sample in one step (see locate, record).
func (n *Normalizer) track(series []byte, en *class, dup bool, v float64) {
	n.record(n.locate(series), en, dup, v)
}

// endTrack marks the lines after the last sample as holding none.
func (n *Normalizer) endTrack() {
	t := &n.trk
	if !t.on || !t.prev {
		return // without prev every line was cleared at the start
	}
	clear(n.fp.ent[min(t.lastEntry+1, len(n.fp.ent)):])
}

// readChanged applies a body whose structure is the previous body's, parsing
// only its changed lines. handled is false, with nothing changed, when the
// body must take the full parse.
func (n *Normalizer) readChanged(body []byte, ct string) (handled bool, err error) {
	f := &n.fp
	if n.full || !f.reuse || f.prevN != len(f.hash) || ct != f.ct {
		return false, nil
	}
	f.sc = changedPool.Get().(*changedScratch)
	defer f.releaseScratch()
	sc := f.sc
	plain := !f.om
	for i, k := range f.changed {
		en := f.ent[k]
		if en == nil {
			return false, nil // a HELP/TYPE/comment/blank line changed
		}
		// A changed line is a new value after the same series: only what
		// follows the series is parsed. Another series takes the full
		// parse.
		line := f.line(body, i)
		if int(en.slen) >= len(line) || seriesKey(line[:en.slen]) != en.key {
			return false, nil
		}
		if plain {
			// One space and the value, as engines write every sample: read
			// as the text parser reads it (plainValue), without its lexer,
			// which was a fifth of a 1,000-endpoint poller's CPU
			// (BENCHMARKS.md, issue 23). Anything else (a timestamp, a
			// tab) takes the parser.
			rest := line[en.slen:]
			v, ok := plainValue(rest[1:])
			sc.val = append(sc.val, v)
			plain = ok && rest[0] == ' '
		}
	}
	if !plain && len(f.changed) > 0 {
		// Parsed by the target's parser, each value after a one-letter
		// name (the lexer is in the same state after either).
		sc.val = sc.val[:0]
		for i, k := range f.changed {
			sc.mini = append(append(sc.mini, 'x'), f.line(body, i)[f.ent[k].slen:]...)
			sc.mini = append(sc.mini, '\n')
		}
		if !n.parseChanged() {
			return false, nil
		}
	}
	n.declared, n.help = f.declared, f.help
	n.incr++
	f.sameOK = true
	c, d := 0, 0
	for k, en := range f.ent {
		if en == nil {
			continue
		}
		v := f.val[k]
		if c < len(f.changed) && int(f.changed[c]) == k {
			v = sc.val[c]
			f.val[k] = v
			c++
		}
		if err := n.count(); err != nil {
			return true, err
		}
		if d < len(f.dups) && int(f.dups[d]) == k {
			d++
			n.dups++
			continue
		}
		n.apply(en, v)
	}
	return true, nil
}

// parseChanged parses the changed lines' values (f.sc.mini) with the
// target's parser; false unless each line is one sample.
func (n *Normalizer) parseChanged() bool {
	f := &n.fp
	sc := f.sc
	if f.om {
		sc.mini = append(sc.mini, "# EOF\n"...)
	}
	// ct is the tracked body's (readChanged checked), so the parser is the
	// one the full parse had, without textparse.New's media-type parsing
	// (a tenth of this path). parserOptions sets nothing these two read.
	var p textparse.Parser
	if f.om {
		p = textparse.NewOpenMetricsParser(sc.mini, n.st)
	} else {
		p = textparse.NewPromParser(sc.mini, n.st, parserOptions.EnableTypeAndUnitLabels)
	}
	pos := 0 // where the next changed line starts in sc.mini
	for {
		e, err := p.Next()
		if err == io.EOF {
			break
		}
		if err != nil || e != textparse.EntrySeries {
			return false
		}
		series, _, v := p.Series()
		off := cap(sc.mini) - cap(series)
		if len(series) == 0 || off != pos || &sc.mini[off] != &series[0] || bytes.IndexByte(series, '\n') >= 0 {
			return false
		}
		// The name must end where the series did: "x_total 1" is
		// another series than "x 1".
		if len(series) != 1 || len(sc.val) == len(f.changed) {
			return false
		}
		sc.val = append(sc.val, v)
		pos += bytes.IndexByte(sc.mini[pos:], '\n') + 1
	}
	return len(sc.val) == len(f.changed)
}
