package promapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net/http"
	"net/url"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vtop-dev/vtop/sources"
)

// Prometheus and VictoriaMetrics answer /federate with the newest sample of
// every matching series as exposition text: what the normalizer reads
// already, without the query engine's and JSON's cost on either side. A
// refresh splits it by replica, line by line, into each replica's records.
// Thanos Query and Mimir have no /federate; they stay on the query API.

// A target's lines are not kept as text between the answer and the
// normalizer: 2,000 replicas' shares of the answers came to ~80 MB at the
// peak of a refresh. Without the target's labels most series read the
// same on every replica, so each answer's series are interned once and a
// target keeps, per line, the series' number and the value's bytes; the
// normalizer's worker writes the text back into its own scratch.

// federateSupported asks /federate for the running gauge: a 200 with text
// that names it means the server federates.
func (c *Client) federateSupported(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	resp, err := c.federateGet(ctx, []string{c.match(c.running())})
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return err == nil && resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(c.running()[0]))
}

// federateGet requests /federate for the given selectors, in the text
// format.
func (c *Client) federateGet(ctx context.Context, matches []string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.endpoint("/federate", url.Values{"match[]": matches}), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	return c.http.Do(req)
}

// fedTarget is one scrape target's lines in a federation answer.
type fedTarget struct {
	m model.Metric // its identifying labels
	// recs are its sample lines, without the server's target labels, as
	// records: uvarint series number, uvarint value length, value bytes.
	recs  []byte
	stamp int64 // newest timestamp of its running gauge, ms; 0: none
	// hint is how long recs grew in the last refresh: the next one's
	// records are made that size at once rather than grown to it.
	hint int
	gen  uint64 // the refresh that last filled it
	// next is the series number its next line likely has: replicas
	// expose the same series in the same order, so a line's series is
	// most often the one that followed its last on the first replica.
	next uint32
	key  []byte // its key in byKey
	// nextT is the target whose line followed its last: a server lists
	// a family's series in label order, so the targets come in the same
	// order in every family. gone: forgotten (no longer in byKey), its
	// lines are not to be filed under it again.
	nextT *fedTarget
	gone  bool
	// tok is the labels a server added to its lines (isTarget), as its
	// last line not read by a shape carried them, joined by ','; tokEnd[i]
	// is where the i-th ends in it.
	tok    []byte
	tokEnd []int
	// tokSet: tok was taken from a line. A target none of whose lines had
	// a shape has none, which must not read as "no added labels" (a
	// label-less target's line was filed under it by shape).
	tokSet bool
}

// federation splits /federate answers by target.
type federation struct {
	byKey map[string]*fedTarget
	// The series of this refresh's answers (name and labels without the
	// target's, then a space), numbered in order of arrival.
	ids     map[string]uint32
	series  []string
	idsGen  uint64 // the refresh ids describe
	key     []byte // scratch
	line    []byte // scratch
	running [][]byte
	// The target of the last line: a histogram's buckets come one after
	// the other, so most lines are the last one's target's.
	lastT *fedTarget
	// shapes are the series' lines' shapes, by series number (with ids);
	// byShape counts the lines read by them.
	shapes  []fedShape
	byShape int
	br      *bufio.Reader
	help    func([]byte) []byte // what every target's text starts with
	now     int64               // the refresh's time, ms
	// Bounds, checked on every answer: past maxTargets new targets are
	// left out (dropped counts their lines), past maxSeries the answer
	// is refused. 0: none.
	maxTargets, maxSeries int
	dropped               int
	// The last line's label walk (walk): its text through the '}', the
	// state after each label, which label set each identifying value and
	// where that value lies; dupID: one was set twice. noReuse walks
	// every line whole (tests compare the two).
	prev    []byte
	marks   []walkMark
	idAt    [5]int
	idPos   [5][2]int
	dupID   bool
	noReuse bool
}

// maxFedLine bounds one line of a /federate answer: a vLLM series with
// every label a server adds is a few hundred bytes; a 250 MB line cost
// 3.4 GB before it was refused.
const maxFedLine = 1 << 20

var errLongLine = fmt.Errorf("a line longer than %d KiB: not a metrics answer", maxFedLine>>10)

func newFederation(running []string, help func([]byte) []byte) *federation {
	f := &federation{byKey: map[string]*fedTarget{}, ids: map[string]uint32{}, help: help}
	for _, n := range running {
		f.running = append(f.running, []byte(n))
	}
	return f
}

// read splits one answer into the targets' buffers. With known, only
// targets already seen in this refresh take lines (the process families,
// which every target exposes, vLLM or not).
func (f *federation) read(r io.Reader, gen uint64, known bool) error {
	// One reader a federation, reused: 256 KiB an answer was garbage.
	if f.br == nil {
		f.br = bufio.NewReaderSize(r, 256<<10)
	} else {
		f.br.Reset(r)
	}
	br := f.br
	defer br.Reset(nil) // the answer's body is not held
	f.lastT = nil       // targets are dropped between answers
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
				if len(long) > maxFedLine {
					return errLongLine
				}
			}
			line = long
		}
		if len(line) > 0 && line[0] == 0 {
			// Prometheus' lexer takes a NUL for the end of the input: a
			// damaged answer, said rather than read in part.
			return errors.New("a NUL byte starts a line: the answer is damaged")
		}
		if len(line) > 0 && line[0] != '#' && line[0] != '\n' {
			if perr := f.sample(line, gen, known); perr != nil {
				return perr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// sample files one sample line under its target.
func (f *federation) sample(line []byte, gen uint64, known bool) error {
	if t, id, end, ok := f.predicted(line, gen); ok {
		f.byShape++
		return f.file(t, id, line, end, gen, known, f.shapes[id].running)
	}
	open := bytes.IndexByte(line, '{')
	if open < 0 || bytes.IndexByte(line[:open], ' ') >= 0 {
		return nil // no labels: no target to file it under
	}
	name := line[:open]
	// One walk of the labels: the target's identity, and the series as
	// the target exposed it (without the labels the server added, a third
	// of the bytes, and without the timestamp: the text the query API
	// path rebuilds).
	vals, ser, end, err := f.walk(line, open)
	if err != nil {
		return fmt.Errorf("federate: %v in %q", err, sources.Sanitize(string(line), 120))
	}
	ser = append(ser, '}', ' ')
	f.line = ser
	ids := f.key[:0]
	for _, v := range vals {
		ids = append(append(ids, v...), 0xff)
	}
	f.key = ids
	t := f.lastT
	if t == nil || !bytes.Equal(ids, t.key) {
		t = f.byKey[string(ids)]
	}
	if t == nil {
		if known {
			return nil
		}
		if f.maxTargets > 0 && len(f.byKey) >= f.maxTargets {
			f.dropped++
			return nil
		}
		m, err := idMetric(line[open+1 : open+1+end])
		if err != nil {
			return fmt.Errorf("federate: %v in %q", err, sources.Sanitize(string(line), 120))
		}
		t = &fedTarget{m: m, key: []byte(string(ids))}
		f.byKey[string(ids)] = t
	}
	if t.gen != gen && known {
		return nil
	}
	if f.idsGen != gen {
		// Numbers live for one refresh: series that vanished are not kept.
		f.ids, f.series, f.shapes, f.idsGen = map[string]uint32{}, nil, f.shapes[:0], gen
	}
	id, ok := t.next, int(t.next) < len(f.series) && f.series[t.next] == string(ser)
	if !ok {
		id, ok = f.ids[string(ser)]
	}
	if !ok {
		if f.maxSeries > 0 && len(f.series) >= f.maxSeries {
			return fmt.Errorf("more than %d distinct series in one answer: narrow --selector", f.maxSeries)
		}
		id = uint32(len(f.series))
		f.series = append(f.series, string(ser))
		f.ids[f.series[id]] = id
		f.shapes = append(f.shapes, fedShape{})
		if !f.noReuse && !f.dupID {
			f.shapes[id].read(line, open, f.isRunning(name))
		}
	}
	if sh := &f.shapes[id]; sh.ok && !f.dupID {
		if _, match := sh.match(line, t); !match {
			// The next line of this target and series is read by the
			// shape: the target's labels as this line carries them.
			t.tok, t.tokEnd = targetLabels(line[open+1:open+1+end], t.tok[:0], t.tokEnd[:0])
			t.tokSet = true
		}
	}
	return f.file(t, id, line, open+1+end, gen, known, f.isRunning(name))
}

// file records a line's value (after: the index just past its labels'
// '}') under target t as series id.
func (f *federation) file(t *fedTarget, id uint32, line []byte, after int, gen uint64, known, running bool) error {
	if t.gen != gen {
		if known {
			return nil
		}
		t.gen, t.stamp, t.next = gen, 0, 0
		t.recs = t.recs[:0]
		if cap(t.recs) == 0 && t.hint > 0 {
			t.recs = make([]byte, 0, t.hint+t.hint/8)
		}
	}
	if t != f.lastT {
		if f.lastT != nil {
			f.lastT.nextT = t
		}
		f.lastT = t
	}
	// "… value [timestamp]": the value is kept; the running gauge's
	// timestamp is the target's newest scrape (none: as of the answer).
	val, ts, nf := valueFields(line[after:])
	if nf == 0 {
		return fmt.Errorf("federate: no value in %q", sources.Sanitize(string(line), 120))
	}
	if running {
		ms := f.now
		if nf == 2 {
			// A stamp in the future (a skewed clock, a hostile server) is
			// taken as now: kept, it would hold the replica's row still
			// until the clock caught up.
			if v, err := strconv.ParseInt(string(ts), 10, 64); err == nil && v < f.now {
				ms = v
			}
		}
		t.stamp = max(t.stamp, ms)
	}
	t.next = id + 1
	t.recs = binary.AppendUvarint(t.recs, uint64(id))
	t.recs = binary.AppendUvarint(t.recs, uint64(len(val)))
	t.recs = append(t.recs, val...)
	return nil
}

// A target's lines differ from another's only in the labels the server
// added (isTarget), and a server lists a family's targets in the same
// order every time: a line is most often the next series (fedTarget.next)
// of the last line's target or of the target that followed it last
// time. A series' shape is its first line's bytes with the added labels
// cut out; the line of a target and series is the shape with the
// target's labels (fedTarget.tok) put back. A line equal to that, byte
// for byte, is filed without walking its labels: the walk would find the
// same labels and so the same target and series.

// fedShape is how a series' lines read: text is its first line through
// the labels' '}' without the added labels, and at each cut the target's
// labels [lo, hi) (by their order in the line) stand between text[:at]
// and the rest. ok: the series has a shape (its first line had no label
// twice and only ',' between the added labels).
type fedShape struct {
	text    []byte
	cuts    []shapeCut
	running bool // the running gauge's: its stamp is the target's
	ok      bool
}

type shapeCut struct{ at, lo, hi int }

// read takes the shape of a series from its line (the '{' at open).
func (sh *fedShape) read(line []byte, open int, running bool) {
	lb := line[open+1:]
	sh.text = append(sh.text[:0], line[:open+1]...)
	sh.cuts, sh.running, sh.ok = sh.cuts[:0], running, false
	n := 0     // added labels so far
	from := -1 // the first added label of the run being read, or -1
	for i := 0; ; {
		l, _, whole, next, err := nextLabel(lb, i)
		if err != nil {
			return
		}
		// Only a line as servers write it has a shape: named labels
		// joined by one ',' each, the '}' right after the last. The walk
		// reads others too (no separator, empty names), and a line
		// matched to a shape taken from one could be filed under a
		// target the walk would not find (FuzzSplitReuse).
		sep := ","
		if i == 0 {
			sep = ""
		}
		switch {
		case l == nil && next != i+1:
			return
		case l != nil && (len(l) == 0 || string(lb[i:next-len(whole)]) != sep):
			return
		}
		target := false
		if l != nil {
			_, target = labelKind(l)
		}
		if target {
			start := next - len(whole) // past the separators
			if from < 0 {
				sh.text = append(sh.text, lb[i:start]...)
				from = n
			} else if string(lb[i:start]) != "," {
				return // not as tok joins them
			}
			n++
			i = next
			continue
		}
		if from >= 0 {
			sh.cuts = append(sh.cuts, shapeCut{at: len(sh.text), lo: from, hi: n})
			from = -1
		}
		sh.text = append(sh.text, lb[i:next]...)
		if l == nil {
			break // the '}'
		}
		i = next
	}
	sh.ok = true
}

// match reports whether line is the series' line of target t, and the
// index just past its labels' '}'.
func (sh *fedShape) match(line []byte, t *fedTarget) (int, bool) {
	if !t.tokSet {
		return 0, false
	}
	p, prev := 0, 0
	for _, c := range sh.cuts {
		seg := sh.text[prev:c.at]
		if len(line)-p < len(seg) || string(line[p:p+len(seg)]) != string(seg) || c.hi > len(t.tokEnd) {
			return 0, false
		}
		p += len(seg)
		lo := 0
		if c.lo > 0 {
			lo = t.tokEnd[c.lo-1] + 1
		}
		run := t.tok[lo:t.tokEnd[c.hi-1]]
		if len(line)-p < len(run) || string(line[p:p+len(run)]) != string(run) {
			return 0, false
		}
		p += len(run)
		prev = c.at
	}
	seg := sh.text[prev:]
	if len(line)-p < len(seg) || string(line[p:p+len(seg)]) != string(seg) {
		return 0, false
	}
	// Every label of the target's, or the line is another target's.
	if k := len(sh.cuts); (k == 0 && len(t.tokEnd) != 0) || (k > 0 && sh.cuts[k-1].hi != len(t.tokEnd)) {
		return 0, false
	}
	return p + len(seg), true
}

// targetLabels appends the added labels of a label block to tok, joined
// by ',', and where each ends to ends.
func targetLabels(lb, tok []byte, ends []int) ([]byte, []int) {
	for i := 0; ; {
		l, _, whole, next, err := nextLabel(lb, i)
		if err != nil || l == nil {
			return tok, ends
		}
		if _, target := labelKind(l); target {
			if len(ends) > 0 {
				tok = append(tok, ',')
			}
			tok = append(tok, whole...)
			ends = append(ends, len(tok))
		}
		i = next
	}
}

// predicted finds a line's target and series by shape: the last line's
// target's next series, or that of the target that followed it last.
func (f *federation) predicted(line []byte, gen uint64) (*fedTarget, uint32, int, bool) {
	if f.noReuse || f.lastT == nil || f.idsGen != gen {
		return nil, 0, 0, false
	}
	for _, t := range [2]*fedTarget{f.lastT, f.lastT.nextT} {
		if t == nil || t.gone {
			continue
		}
		id := t.next
		if t.gen != gen {
			id = 0 // its first line in this refresh: most often the first series
		}
		if int(id) >= len(f.shapes) {
			continue
		}
		if sh := &f.shapes[id]; sh.ok {
			if end, ok := sh.match(line, t); ok {
				return t, id, end, true
			}
		}
	}
	return nil, 0, 0, false
}

// walk reads the labels of a line whose '{' is at open: the identifying
// labels' raw values, the series text without the target's labels (in
// f.line's storage, up to the '}' it lacks) and the index in
// line[open+1:] just past the '}'. The labels the line shares with the
// last line walked, byte for byte from its start, are not walked again:
// a target's histogram buckets come one after another, alike up to le,
// and most of a 2,000-replica answer's ~650,000 lines are buckets.
func (f *federation) walk(line []byte, open int) (vals [5][]byte, ser []byte, end int, err error) {
	lb := line[open+1:]
	i, n, k := 0, 0, 0
	if !f.noReuse && !f.dupID && len(f.marks) > 0 {
		c := commonPrefix(line, f.prev) - (open + 1)
		for k < len(f.marks) && f.marks[k].end <= c {
			k++
		}
	}
	if k > 0 {
		m := f.marks[k-1]
		i, n, ser = m.end, m.n, f.line[:m.serLen]
		for id, at := range f.idAt {
			if at >= 0 && at < k {
				vals[id] = lb[f.idPos[id][0]:f.idPos[id][1]]
			} else {
				f.idAt[id] = -1
			}
		}
	} else {
		ser = append(append(f.line[:0], line[:open]...), '{')
		f.idAt = [5]int{-1, -1, -1, -1, -1}
	}
	f.marks, f.dupID = f.marks[:k], false
	for {
		l, raw, whole, next, err := nextLabel(lb, i)
		if err != nil {
			f.marks = f.marks[:0] // the next line is walked whole
			return vals, ser, 0, err
		}
		if l == nil {
			end = next
			break
		}
		id, target := labelKind(l)
		if id >= 0 {
			if f.idAt[id] >= 0 {
				f.dupID = true // which of the two counts is not a prefix's to say
			}
			vals[id] = raw
			f.idAt[id], f.idPos[id] = len(f.marks), [2]int{next - 1 - len(raw), next - 1}
		}
		if !target {
			if n > 0 {
				ser = append(ser, ',')
			}
			ser = append(ser, whole...)
			n++
		}
		f.marks = append(f.marks, walkMark{end: next, serLen: len(ser), n: n})
		i = next
	}
	f.prev = append(f.prev[:0], line[:open+1+end]...)
	return vals, ser, end, nil
}

// walkMark is the walk's state just past one label of the last line: the
// index after the label in its label block, the series text's length and
// how many labels it held.
type walkMark struct{ end, serLen, n int }

// commonPrefix is how many bytes a and b share from their start.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// isRunning reports whether a family is the running gauge.
func (f *federation) isRunning(name []byte) bool {
	for _, r := range f.running {
		if bytes.Equal(name, r) {
			return true
		}
	}
	return false
}

// valueFields splits "value [timestamp]" as bytes.Fields would, without
// its slice per line (37 MB of garbage a 2,000-replica refresh): the first
// two tokens and how many there are.
func valueFields(b []byte) (val, ts []byte, n int) {
	for i := 0; i < len(b); {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		j := i
		for j < len(b) && !isSpace(b[j]) {
			j++
		}
		if j > i {
			switch n {
			case 0:
				val = b[i:j]
			case 1:
				ts = b[i:j]
			}
			n++
		}
		i = j
	}
	return val, ts, n
}

// isSpace is asked of every byte of every line's value and stamp: one
// load, where four comparisons were a fifth of the split's time.
func isSpace(c byte) bool { return spaceBytes[c] }

var spaceBytes = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// text appends a target's lines as exposition text (after the header
// every target's text starts with, if any).
func (f *federation) text(b []byte, t *fedTarget) []byte {
	if f.help != nil {
		b = f.help(b)
	}
	for r := t.recs; len(r) > 0; {
		id, n := binary.Uvarint(r)
		r = r[n:]
		l, n := binary.Uvarint(r)
		r = r[n:]
		b = append(append(append(b, f.series[id]...), r[:l]...), '\n')
		r = r[l:]
	}
	return b
}

// forget drops target t (key k): a target that comes back is a new one.
// Another's nextT may still lead to t; gone keeps its lines off it.
func (f *federation) forget(k string, t *fedTarget) {
	delete(f.byKey, k)
	t.gone, t.nextT = true, nil
}

// release drops what the refresh's answers left: the targets' lines and
// the series, so nothing of the text waits for the next refresh.
func (f *federation) release() {
	for _, t := range f.byKey {
		t.hint, t.recs = len(t.recs), nil
	}
	f.ids, f.series, f.shapes, f.idsGen = map[string]uint32{}, nil, nil, 0
}

// labelKind is isID and isTarget in one look at the name: the split asks
// both of every label of every line.
func labelKind(l []byte) (id int, target bool) {
	switch string(l) {
	case "cluster":
		return 0, true
	case "namespace":
		return 1, true
	case "pod":
		return 2, true
	case "job":
		return 3, true
	case "instance":
		return 4, true
	case "__name__", "container", "service", "endpoint", "node", "prometheus", "prometheus_replica":
		return -1, true
	}
	return -1, false
}

// isTarget reports whether a label is one a server adds to every series
// of a target, never vLLM's own.
func isTarget(l []byte) bool {
	switch string(l) {
	case "__name__", "cluster", "namespace", "pod", "job", "instance", "container", "service", "endpoint", "node",
		"prometheus", "prometheus_replica":
		return true
	}
	return false
}

// isID reports whether a label (its bytes) identifies the replica, and
// which of idLabels it is.
func isID(l []byte) int {
	switch string(l) { // idLabels' order
	case "cluster":
		return 0
	case "namespace":
		return 1
	case "pod":
		return 2
	case "job":
		return 3
	case "instance":
		return 4
	}
	return -1
}

// idMetric is the identifying labels of a label block, unescaped.
func idMetric(lb []byte) (model.Metric, error) {
	m := model.Metric{}
	_, err := eachLabel(lb, func(name, raw []byte) {
		if isID(name) < 0 {
			return
		}
		m[model.LabelName(name)] = model.LabelValue(lvalReplacer.Replace(string(raw)))
	})
	return m, err
}

// lvalReplacer undoes the text format's escapes in a label value as
// Prometheus' own parser does: \\, \" and \n; any other backslash stays.
var lvalReplacer = strings.NewReplacer(`\"`, "\"", `\\`, "\\", `\n`, "\n")

// eachLabel walks `a="x",b="y"}` calling fn with each name and raw
// (still escaped) value; it returns the index just past the '}'.
func eachLabel(lb []byte, fn func(name, raw []byte)) (int, error) {
	i := 0
	for {
		for i < len(lb) && (lb[i] == ',' || lb[i] == ' ') {
			i++
		}
		if i < len(lb) && lb[i] == '}' {
			return i + 1, nil
		}
		eq := bytes.IndexByte(lb[i:], '=')
		if eq < 0 || i+eq+1 >= len(lb) || lb[i+eq+1] != '"' {
			return 0, errBadLabel
		}
		name := lb[i : i+eq]
		j := i + eq + 2
		start := j
		for j < len(lb) && lb[j] != '"' {
			if lb[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(lb) {
			return 0, errUnterminated
		}
		fn(name, lb[start:j])
		i = j + 1
	}
}

// nextLabel reads the label at lb[i:] of a block `a="x",b="y"}` as
// eachLabel walks it: its name, raw (still escaped) value and whole text
// (`a="x"`), and where the next begins; at the block's end name is nil
// and next is just past the '}'. The split reads every label of ~650,000
// lines a 2,000-replica refresh: this finds a value's end with IndexByte
// rather than a byte at a time, and takes no closure call per label.
func nextLabel(lb []byte, i int) (name, raw, whole []byte, next int, err error) {
	for i < len(lb) && (lb[i] == ',' || lb[i] == ' ') {
		i++
	}
	if i < len(lb) && lb[i] == '}' {
		return nil, nil, nil, i + 1, nil
	}
	eq := bytes.IndexByte(lb[i:], '=')
	if eq < 0 || i+eq+1 >= len(lb) || lb[i+eq+1] != '"' {
		return nil, nil, nil, 0, errBadLabel
	}
	start := i + eq + 2
	j := start
	for {
		q := bytes.IndexByte(lb[j:], '"')
		if q < 0 {
			return nil, nil, nil, 0, errUnterminated
		}
		bs := bytes.IndexByte(lb[j:j+q], '\\')
		if bs < 0 {
			j += q
			break
		}
		j += bs + 2 // a backslash takes the byte after it, a quote too
		if j > len(lb) {
			return nil, nil, nil, 0, errUnterminated
		}
	}
	return lb[i : i+eq], lb[start:j], lb[i : j+1], j + 1, nil
}

var (
	errBadLabel     = errors.New("bad label")
	errUnterminated = errors.New("unterminated label value")
)

// fedGroups splits vLLM's names into up to maxParallel /federate requests
// of about equal size (a bucket name counts as the ~20 series it holds),
// the names replicas are keyed on (the running gauge, a router's numbers)
// in the first: a server answers each on its own core.
func (c *Client) fedGroups() [][]string {
	weight := func(n string) int {
		if strings.HasSuffix(n, "_bucket") {
			return 20
		}
		return 1
	}
	names := slices.Clone(c.vllmNames())
	slices.SortStableFunc(names, func(a, b string) int { return weight(b) - weight(a) })
	n := min(maxParallel, max(1, len(names)/4))
	groups, load := make([][]string, n), make([]int, n)
	groups[0] = slices.Clone(c.stamped())
	stamped := len(groups[0])
	for _, name := range names {
		if slices.Contains(groups[0][:stamped], name) {
			continue
		}
		i := slices.Index(load, slices.Min(load))
		groups[i] = append(groups[i], name)
		load[i] += weight(name)
	}
	return groups
}

// refreshFederated is refresh through /federate: vLLM's families in a few
// answers read at once, then the process families of the jobs that serve
// vLLM; the replicas are normalized in parallel.
func (s *Source) refreshFederated(ctx context.Context, now time.Time) (sources.Batch, error) {
	c := s.c
	b := sources.Batch{Now: now}
	s.gen++
	defer func() {
		for _, f := range s.feds {
			f.release()
		}
	}()
	errs := make([]error, len(s.groups))
	var wg sync.WaitGroup
	for i, g := range s.groups {
		s.feds[i].now = now.UnixMilli()
		s.feds[i].maxTargets, s.feds[i].maxSeries, s.feds[i].dropped = c.maxReplicas(), c.cfg.MaxSeries, 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.federated(ctx, s.feds[i], []string{c.match(g)}, false)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return b, err
	}
	fed := s.feds[0] // every engine is there: its running gauge is
	jobs := map[string]bool{}
	for _, t := range fed.byKey {
		if t.gen == s.gen && t.stamp > 0 {
			jobs[regexpQuote(string(t.m["job"]))] = true
		}
	}
	if len(jobs) > 0 {
		js := make([]string, 0, len(jobs))
		for j := range jobs {
			js = append(js, j)
		}
		slices.Sort(js)
		m := strings.TrimSuffix(c.match(sources.EndpointNames()), "}") + `,job=~"` + strings.Join(js, "|") + `"}`
		if err := s.federated(ctx, fed, []string{m}, true); err != nil {
			return b, err
		}
	}
	for _, f := range s.feds[1:] {
		for k, t := range f.byKey {
			if t.gen != s.gen {
				f.forget(k, t)
			}
		}
	}
	// As refresh: a target whose newest scrape is a few intervals old has
	// departed (the server keeps answering with its last samples).
	gone := s.horizon(now.Add(-lag))
	var todo []normJob
	for k, t := range fed.byKey {
		if t.gen != s.gen {
			fed.forget(k, t) // not in the answer any more
			continue
		}
		at := time.UnixMilli(t.stamp)
		if t.stamp == 0 || !s.within(at, gone) {
			continue // no running gauge (not an engine), or departed
		}
		r, added := s.fleet.get(t.m)
		if added {
			b.Arrived = append(b.Arrived, r.target())
		}
		r.seen = s.gen
		if !at.After(r.last) {
			continue // no new scrape since the last refresh
		}
		r.last = at
		j := normJob{r: r, at: at, parts: []fedPart{{fed, t}}}
		for _, f := range s.feds[1:] {
			if u := f.byKey[k]; u != nil {
				j.parts = append(j.parts, fedPart{f, u})
			}
		}
		todo = append(todo, j)
	}
	b.Scrapes = s.normalizeAll(todo, b.Scrapes)
	if err := s.departed(ctx, &b, now.Add(-lag), gone); err != nil {
		return b, err
	}
	dropped := 0
	for _, f := range s.feds {
		dropped += f.dropped
	}
	s.bounded(&b, dropped)
	if err := s.readGPUs(ctx, &b, now.Add(-lag)); err != nil {
		return b, err
	}
	return b, nil
}

// normJob is one exposition of a replica to normalize: buf, or its lines
// in the /federate answers, written out in the worker's scratch buffer so
// no replica holds the text.
type normJob struct {
	r     *replica
	buf   []byte
	parts []fedPart
	at    time.Time
	out   sources.Scrape
}

// fedPart is a target's share of one /federate answer.
type fedPart struct {
	f *federation
	t *fedTarget
}

// normalizeAll normalizes the replicas' expositions in parallel (each
// replica has its own normalizer) and appends the scrapes to out in
// order. Each worker keeps its own SeriesClasses: a series the worker saw
// on one replica is not parsed again for the next.
func (s *Source) normalizeAll(todo []normJob, out []sources.Scrape) []sources.Scrape {
	keep := s.c.cfg.KeepBody
	next := make(chan int)
	var wg sync.WaitGroup
	for w := range min(len(todo), runtime.GOMAXPROCS(0)) {
		if w == len(s.classes) {
			s.classes = append(s.classes, sources.NewSeriesClasses(maxClasses))
		}
		classes := s.classes[w]
		wg.Add(1)
		go func() {
			defer wg.Done()
			var scratch []byte
			var sp splitScratch
			for i := range next {
				j := &todo[i]
				j.r.norm.Classes = classes
				if len(j.parts) > 0 && !keep && sp.normalize(j) {
					j.r.norm.Classes = nil
					continue
				}
				body := j.buf
				if len(j.parts) > 0 {
					scratch = scratch[:0]
					for _, p := range j.parts {
						scratch = p.f.text(scratch, p.t)
					}
					body = scratch
				}
				j.out = j.r.normalize(body, j.at, keep)
				j.r.norm.Classes = nil
			}
		}()
	}
	for i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
	for i := range todo {
		out = append(out, todo[i].out)
	}
	return out
}

// splitScratch is one normalizing worker's: the answers' series it
// resolved for sources.Normalizer.NormalizePlain in this refresh, by
// answer and series number, and a body's header and samples.
type splitScratch struct {
	refs    map[*federation][]splitRef
	header  []byte
	samples []sources.PlainSample
}

// splitRef is a series resolved (or found not in the plain form).
type splitRef struct {
	ref       sources.PlainRef
	done, bad bool
}

// normalize reads a replica's lines in the /federate answers as the
// samples the split left (series number, value) rather than as the text
// they make, written out and read again: at 2,000 replicas that text was
// ~650,000 lines a refresh made of ~1,300 series. False, with nothing
// read, when the text must be read (a series or value not in the plain
// form: the text parser decides those).
func (sp *splitScratch) normalize(j *normJob) bool {
	if sp.refs == nil {
		sp.refs = map[*federation][]splitRef{}
	}
	n := j.r.norm
	sp.header, sp.samples = sp.header[:0], sp.samples[:0]
	for _, p := range j.parts {
		if p.f.help != nil {
			sp.header = p.f.help(sp.header)
		}
		refs := sp.refs[p.f]
		if len(refs) < len(p.f.series) {
			refs = append(refs, make([]splitRef, len(p.f.series)-len(refs))...)
			sp.refs[p.f] = refs
		}
		for r := p.t.recs; len(r) > 0; {
			id, k := binary.Uvarint(r)
			r = r[k:]
			l, k := binary.Uvarint(r)
			r = r[k:]
			val := r[:l]
			r = r[l:]
			sr := &refs[id]
			if !sr.done {
				// The series' text ends "} ": the space is the line's.
				sr.ref, sr.done = n.ResolvePlain([]byte(strings.TrimSuffix(p.f.series[id], " ")))
				sr.bad, sr.done = !sr.done, true
			}
			if sr.bad {
				return false
			}
			sp.samples = append(sp.samples, sources.PlainSample{Ref: sr.ref, Value: val})
		}
	}
	s := sources.Scrape{Target: j.r.name, Time: j.at}
	snap, handled, err := n.NormalizePlain(sp.header, sp.samples)
	if !handled {
		return false
	}
	if err != nil {
		s.Err = err // as replica.normalize says it
	} else {
		s.Data = snap
	}
	j.out = s
	return true
}

// federated reads one /federate answer into f.
func (s *Source) federated(ctx context.Context, f *federation, matches []string, known bool) error {
	c := s.c
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	what := "federate " + strings.Join(matches, " ")
	resp, err := c.federateGet(ctx, matches)
	if err != nil {
		return c.queryErr(what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c.queryErr(what, fmt.Errorf("HTTP %s", resp.Status))
	}
	if err := f.read(resp.Body, s.gen, known); err != nil {
		return c.queryErr(what, err)
	}
	return nil
}

// regexpQuote escapes a label value for a =~ matcher inside a PromQL string.
func regexpQuote(v string) string {
	q := strconv.Quote(regexp.QuoteMeta(v))
	return q[1 : len(q)-1]
}
