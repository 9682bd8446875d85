package sources

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/model/value"
)

// A body in the plain form is read without the text parser's lexer. The
// plain form is what the Prometheus source rebuilds from a /federate
// answer for each replica: an optional HELP line, then one sample a line,
// `name{label="value",…} value`, nothing else. At 2,000 replicas the
// lexer's walk of those lines was a fifth of a refresh's CPU; a first
// pass here checks that the whole body is in that form and resolves each
// series' class (a series text the parser has read before is looked up;
// a new one is walked as the lexer would, names, escapes and UTF-8, and
// the line parsed alone), and only then does the body's state change,
// sample by sample as read applies them. Anything else (a TYPE line, a comment, a
// timestamp, a blank line, a quoted name, a space where the form has
// none) leaves the body to the text parser, whole, with nothing changed:
// this path never decides how a line the parser would read differently
// is read.

// plainSample is one sample line of a plain body.
type plainSample struct {
	start, end int // the series: body[start:end]
	c          *class
	key        uint64
	v          float64
}

// plainScratch is a plain body's samples while it is read: pooled, not
// kept per target.
type plainScratch struct {
	s    []plainSample
	line []byte // ResolvePlain's line
}

var plainPool = sync.Pool{New: func() any { return new(plainScratch) }}

// isPlainText reports whether a Content-Type selects the text parser
// (textparse.New): text/plain with any parameters, or none at all.
func isPlainText(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.TrimSpace(mt)
	return mt == "" || strings.EqualFold(mt, "text/plain")
}

// readPlain reads body when it is in the plain form; handled is false,
// with nothing changed, when it is not.
func (n *Normalizer) readPlain(body []byte, ct string) (handled bool, err error) {
	if n.noPlain || !isPlainText(ct) {
		return false, nil
	}
	sc := plainPool.Get().(*plainScratch)
	defer func() {
		if cap(sc.s) <= 4096 {
			sc.s = sc.s[:0]
			plainPool.Put(sc)
		}
	}()
	help := GenUnknown
	for off := 0; off < len(body); {
		nl := bytes.IndexByte(body[off:], '\n')
		if nl < 0 {
			return false, nil // the last line unended
		}
		line := body[off : off+nl]
		if len(line) == 0 {
			return false, nil
		}
		if line[0] == '#' {
			g, ok := plainHelp(line)
			if !ok {
				return false, nil
			}
			if g != GenUnknown {
				help = g
			}
		} else {
			s, ok := n.plainSample(line)
			if !ok {
				return false, nil
			}
			s.start += off
			s.end += off
			sc.s = append(sc.s, s)
		}
		off += nl + 1
	}
	n.plain++
	n.startTrackText(false, body, ct)
	defer func() {
		n.trk = tracker{}
		n.sweepOwn()
	}()
	n.help = help
	return true, n.applyPlain(body, sc.s)
}

// applyPlain applies a plain body's samples, checked and resolved, in
// order, as read applies a full parse's: a series seen before in the body
// is counted, not applied. body is what the samples' offsets point into
// (nil for a split body, whose reading tracks no lines).
func (n *Normalizer) applyPlain(body []byte, ss []plainSample) error {
	seen := keySetPool.Get().(*keySet)
	seen.reset(len(ss))
	defer func() {
		if len(seen.keys) <= 1<<14 {
			keySetPool.Put(seen)
		}
	}()
	for i := range ss {
		s := &ss[i]
		if err := n.count(); err != nil {
			return err
		}
		series := body[s.start:s.end]
		if seen.add(s.key) {
			n.track(series, s.c, true, s.v)
			n.dups++
			continue
		}
		n.track(series, s.c, false, s.v)
		n.apply(s.c, s.v)
	}
	n.endTrack()
	n.fp.declared, n.fp.help = n.declared, n.help
	return nil
}

// keySet is the series keys a plain body has shown, to find one shown
// twice: the keys are hashes already, so a table probed from the key's
// low bits, its slots marked by the body's epoch rather than cleared,
// takes a fifth of what a map did (its assignments were ~30 % of
// normalizing a /federate refresh's 2,000 bodies).
type keySet struct {
	keys  []uint64
	marks []uint32 // slot i holds keys[i] when marks[i] == epoch
	epoch uint32
	mask  uint64
}

var keySetPool = sync.Pool{New: func() any { return new(keySet) }}

// reset empties the set for a body of up to n keys.
func (s *keySet) reset(n int) {
	size := 64
	for size < 2*n {
		size *= 2
	}
	if len(s.keys) < size {
		s.keys, s.marks, s.epoch = make([]uint64, size), make([]uint32, size), 0
	}
	s.mask = uint64(len(s.keys) - 1)
	s.epoch++
	if s.epoch == 0 { // wrapped: old marks could read as this body's
		clear(s.marks)
		s.epoch = 1
	}
}

// add adds k and reports whether it was there already.
func (s *keySet) add(k uint64) bool {
	for i := k & s.mask; ; i = (i + 1) & s.mask {
		if s.marks[i] != s.epoch {
			s.marks[i], s.keys[i] = s.epoch, k
			return false
		}
		if s.keys[i] == k {
			return true
		}
	}
}

// A body in the plain form may also be handed over as its parts, never
// written out as text: the Prometheus source splits a /federate answer
// into each replica's (series, value) pairs, and the same ~1,300 series
// texts make up every replica's body. Each series text is resolved once
// (ResolvePlain) and each body is then its header lines and, per sample,
// a resolved series and the value's bytes (NormalizePlain): what reading
// the text would do line by line (find the value, hash the series, look
// its class up under a lock) is done once a series, not once a line.

// PlainRef is a series text resolved for NormalizePlain.
type PlainRef struct{ c *class }

// PlainSample is one sample line of a plain body as its parts: the line
// is the series text Ref was resolved from, a space, Value and a newline.
type PlainSample struct {
	Ref   PlainRef
	Value []byte
}

// ResolvePlain resolves a series text (`name{l="v",…}`, without the
// space that follows it in a line) as a sample line of a plain body
// resolves it; ok is false when a line with it is not in the plain form,
// and the body's text must then be read.
func (n *Normalizer) ResolvePlain(series []byte) (ref PlainRef, ok bool) {
	sc := plainPool.Get().(*plainScratch)
	line := append(append(sc.line[:0], series...), " 0"...)
	s, ok := n.plainSample(line)
	sc.line = line
	plainPool.Put(sc)
	if !ok || s.end != len(series) {
		return PlainRef{}, false
	}
	return PlainRef{s.c}, true
}

// NormalizePlain reads a plain body given as its parts: header, its
// comment lines (each ended by a newline), then samples in order. The
// snapshot is the one Normalize gives for the text they make. handled is
// false, with nothing changed, when that text is not in the plain form
// (a sample with an unresolved series, a value the text parser reads
// otherwise, a header other than a HELP): Normalize must read the text.
// The body is not fingerprinted: a text body read after it is read in
// full.
func (n *Normalizer) NormalizePlain(header []byte, samples []PlainSample) (snap *Snapshot, handled bool, err error) {
	if n.noPlain {
		return nil, false, nil
	}
	help := GenUnknown
	for off := 0; off < len(header); {
		nl := bytes.IndexByte(header[off:], '\n')
		if nl <= 0 {
			return nil, false, nil // unended, or a blank line
		}
		g, ok := plainHelp(header[off : off+nl])
		if !ok {
			return nil, false, nil
		}
		if g != GenUnknown {
			help = g
		}
		off += nl + 1
	}
	sc := plainPool.Get().(*plainScratch)
	defer func() {
		if cap(sc.s) <= 4096 {
			sc.s = sc.s[:0]
			plainPool.Put(sc)
		}
	}()
	for _, ps := range samples {
		v, ok := plainValue(ps.Value)
		if ps.Ref.c == nil || !ok {
			return nil, false, nil
		}
		sc.s = append(sc.s, plainSample{c: ps.Ref.c, key: ps.Ref.c.key, v: v})
	}
	defer n.done()
	n.fp.forget()
	n.begin()
	n.plain++
	n.trk = tracker{}
	n.help = help
	err = n.applyPlain(nil, sc.s)
	n.sweepOwn()
	if err != nil {
		n.sweep()
		return nil, true, err
	}
	snap, err = n.finish()
	return snap, true, err
}

// plainValue reads a sample's value as the text parser would, when the
// lexer and the parser take it as a value alone.
func plainValue(val []byte) (float64, bool) {
	if len(val) == 0 {
		return 0, false
	}
	for _, c := range val {
		switch c {
		case '\t', '{', 'p', 'P', '_', ' ', '\n':
			return 0, false // what the lexer or parseFloat take otherwise
		}
	}
	if v, ok := shortDecimal(val); ok {
		return v, true
	}
	v, err := strconv.ParseFloat(string(val), 64)
	if err != nil {
		return 0, false
	}
	if math.IsNaN(v) {
		v = math.Float64frombits(value.NormalNaN) // as the text parser hands it on
	}
	return v, true
}

// shortDecimal reads digits with at most one '.' among them, 15 digits at
// most, as strconv.ParseFloat does: the digits make an integer below 2^53
// and the point a power of ten up to 1e15, both exact in a float64, so
// their quotient, rounded once, is the correctly rounded value ParseFloat
// gives (its own exact path, without its general reader). A counter's or
// a bucket's value is most often such a number; ParseFloat was a quarter
// of normalizing a 2,000-replica /federate refresh. ok is false for
// anything else (a sign, an exponent, more digits), which ParseFloat reads.
func shortDecimal(val []byte) (float64, bool) {
	var m uint64
	digits, frac := 0, -1
	for _, c := range val {
		switch {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0:
			frac = 0
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 {
		return 0, false
	}
	if frac <= 0 {
		return float64(m), true
	}
	return float64(m) / pow10[frac], true
}

// pow10 are the powers of ten shortDecimal divides by, each exact.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// plainHelp reads `# HELP name text`: the generation the running gauge's
// help says (GenUnknown for another family's). A help with an escape,
// or any other comment, is not in the plain form.
func plainHelp(line []byte) (Gen, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("# HELP "))
	if !ok {
		return GenUnknown, false
	}
	i := nameEnd(rest, true)
	if i == 0 || i >= len(rest) || rest[i] != ' ' {
		return GenUnknown, false
	}
	name, text := rest[:i], rest[i+1:]
	if bytes.IndexByte(text, '\\') >= 0 || !utf8.Valid(text) {
		return GenUnknown, false
	}
	if isRunningFamily(name) {
		switch {
		case bytes.Equal(text, helpRunV0):
			return GenV0, true
		case bytes.Equal(text, helpRunV1):
			return GenV1, true
		}
	}
	return GenUnknown, true
}

// plainSample reads one sample line, `name{l="v",…} value`, and resolves
// its series' class: from the shared classes, or by parsing the line
// alone (what read would have resolved it to: the text parser's labels
// follow from the line alone). The value is after the line's last space
// (a value holds none). A series text found among the shared classes is
// one the text parser read as a series before, so it is not walked
// again: ~1,300 distinct series make up a 2,000-replica refresh.
func (n *Normalizer) plainSample(line []byte) (plainSample, bool) {
	sp := bytes.LastIndexByte(line, ' ')
	if sp <= 0 {
		return plainSample{}, false
	}
	series := line[:sp]
	v, ok := plainValue(line[sp+1:])
	if !ok {
		return plainSample{}, false
	}
	key := seriesKey(series)
	cs := n.Classes
	if cs == nil {
		cs = processClasses
	}
	c := cs.get(key, series)
	if c == nil {
		// First sight: the series in the plain form, then the line alone,
		// with its own end (the parser appends one), through the parser.
		i := nameEnd(line, true)
		if i == 0 || i >= len(line) {
			return plainSample{}, false
		}
		if line[i] == '{' {
			j, ok := plainLabels(line, i+1)
			if !ok {
				return plainSample{}, false
			}
			i = j
		}
		if i != sp {
			return plainSample{}, false // a timestamp, a second space, …
		}
		p := textparse.NewPromParser(line[:len(line):len(line)], n.st, false)
		if e, err := p.Next(); err != nil || e != textparse.EntrySeries {
			return plainSample{}, false
		}
		if ps, _, _ := p.Series(); !bytes.Equal(ps, series) {
			return plainSample{}, false
		}
		c = n.classify(p, series, key)
		cs.put(series, c)
	}
	return plainSample{start: 0, end: sp, c: c, key: key, v: v}, true
}

// nameEnd is the end of the name b starts with: a metric name (first
// may hold ':') or a label name, as the text lexer takes them; 0: none.
func nameEnd(b []byte, metric bool) int {
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', metric && c == ':':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return i
		}
	}
	return len(b)
}

// plainLabels walks `l="v",…}` (or `}`) from i: names as the lexer takes them,
// values with escapes, on one line, valid UTF-8; it returns the index
// just past the '}'.
func plainLabels(line []byte, i int) (int, bool) {
	if i < len(line) && line[i] == '}' {
		return i + 1, true // `name{}`: a family without labels of its own, rebuilt
	}
	for {
		j := i + nameEnd(line[i:], false)
		if j == i || j+1 >= len(line) || line[j] != '=' || line[j+1] != '"' {
			return 0, false
		}
		k := j + 2
		ascii := true
		for k < len(line) && line[k] != '"' {
			if line[k] == '\\' {
				k++
			}
			if k < len(line) && line[k] >= utf8.RuneSelf {
				ascii = false
			}
			k++
		}
		if k >= len(line) {
			return 0, false
		}
		if !ascii && !utf8.Valid(line[j+2:k]) {
			return 0, false
		}
		i = k + 1
		switch {
		case i < len(line) && line[i] == '}':
			return i + 1, true
		case i+1 < len(line) && line[i] == ',' && line[i+1] != '}':
			i++ // the next label; a free trailing comma is the parser's
		default:
			return 0, false
		}
	}
}
