package record

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/vtop-dev/vtop/sources"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// keyEvery bounds a delta chain: every so many scrapes of a target its
// whole body is written again.
const keyEvery = 3600

// Writer appends frames to a recording. Each frame is written with one
// write call and is complete in itself (its own zstd frame and checksum),
// so a process killed at any moment leaves a file readable up to its last
// whole frame. Methods are safe for concurrent use; after a write error
// the Writer records nothing more and Err says why.
type Writer struct {
	mu   sync.Mutex
	path string // "" when writing to a plain io.Writer (no rotation)
	max  int64
	out  io.Writer
	file *os.File
	size int64
	hdr  Header
	enc  *zstd.Encoder
	err  error

	targets   []prevBody
	index     map[string]int // target name → index in this file
	gpu       prevBody
	raw       []byte // frame payload before compression
	frame     []byte
	zbuf      []byte
	batch     []byte    // records not yet written, by flush
	flushed   time.Time // the tick that last flushed the batch
	lines     [][]byte
	prevLines [][]byte
	line      []byte
	// Rotations counts files moved aside to PATH.1.
	rotations int
	// problems are the sources' problems standing now, by key: a new
	// file after a rotation starts with them, so it replays on its own.
	problems map[string]wireProblem
}

// prevBody is what the writer knows of one target's (or the GPUs') body.
type prevBody struct {
	store *lineStore // the latest body, as lines; kept across rotation
	base  bool       // this file's last body of the target is store's: a delta may follow
	hasCT bool       // this file has the target's Content-Type
	since int        // scrapes since the last whole body
	last  changedSet // the lines the last delta changed
	spare changedSet // last's buffer before it
	ct    string     // the last Content-Type (scrapes)
}

// Create starts a recording at path (truncating it). maxBytes > 0 bounds
// the disk it takes: when the file passes half of it, it is renamed to
// path.1 (replacing an older one) and a new file starts with its own
// header and whole bodies, so each file replays on its own and the two
// together stay within maxBytes plus one frame.
//
// The header's targets are targets, redacted; the writer knows them by
// their live names.
func Create(path string, hdr Header, targets []sources.Target, maxBytes int64) (*Writer, error) {
	w := &Writer{path: path, max: maxBytes}
	hdr.Targets = Targets(targets)
	if err := w.open(hdr); err != nil {
		return nil, err
	}
	w.indexNames(targets)
	return w, nil
}

func (w *Writer) indexNames(targets []sources.Target) {
	for i, t := range targets {
		w.index[t.Name] = i
	}
}

func (w *Writer) open(hdr Header) error {
	// A new file only: never through a symbolic link (another user could
	// plant one pointing at a file of ours), never over an existing file
	// (a recording kept from an incident, a typo naming another file). A
	// rotation renamed the old one away first.
	f, err := os.OpenFile(w.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			if st, lerr := os.Lstat(w.path); lerr == nil && st.Mode()&os.ModeSymlink != 0 {
				return fmt.Errorf("--record %s is a symbolic link; give a new file", w.path)
			}
			return fmt.Errorf("--record %s exists; vtop does not overwrite a file: remove it or give a new name", w.path)
		}
		return fmt.Errorf("--record: %v", err)
	}
	w.file, w.out, w.size = f, f, 0
	if err := w.start(hdr); err != nil {
		f.Close()
		return fmt.Errorf("--record %s: %v", w.path, err)
	}
	return nil
}

func (w *Writer) start(hdr Header) error {
	if w.enc == nil {
		// No zstd checksum: the frame carries a CRC-32C of the compressed bytes.
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false))
		if err != nil {
			return err
		}
		w.enc = enc
	}
	hdr.Format = Version
	w.hdr = hdr
	w.targets = make([]prevBody, len(hdr.Targets))
	w.index = map[string]int{}
	w.gpu = prevBody{}
	if _, err := w.out.Write(magic[:]); err != nil {
		return err
	}
	w.size += int64(len(magic))
	b, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	return w.writeFrame(typeHeader, b, true)
}

// Err returns the first write error, after which nothing more is recorded.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Path is the file being written ("" for an io.Writer).
func (w *Writer) Path() string { return w.path }

// Header returns the header of the file being written.
func (w *Writer) Header() Header {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hdr
}

// Scrape records one scrape as the pipeline ingested it: its body, whole
// (s.Body) or as its changed lines against the target's previous body
// (s.Lines), and Content-Type, or its (already sanitized) error. The writer
// keeps s.Body, and releases s.Lines once encoded (copied into its own
// store): the caller must not change the one or use the other after.
func (w *Writer) Scrape(s *sources.Scrape) {
	w.locked(true, func() {
		defer s.Lines.Release()
		i := w.target(sources.Target{Name: s.Target})
		p := &w.targets[i]
		raw := binary.AppendUvarint(w.raw[:0], uint64(i))
		raw = binary.AppendVarint(raw, s.Time.UnixNano())
		raw = binary.AppendUvarint(raw, uint64(max(s.Duration, 0)))
		switch {
		case s.Err != nil:
			// A body it carries (of a scrape it replaced unseen) moves the
			// target's body without being recorded: the next is whole.
			p.advance(s)
			raw = append(raw, bodyError)
			raw = appendString(raw, s.Err.Error())
		case s.Lines != nil && (p.store == nil || !p.store.fitsIndex(s.Lines)):
			raw = p.notRecorded(raw)
		default:
			// The Content-Type is written when it changes: uvarint 0 is "as
			// before", else its length + 1 and the bytes.
			mark, ct, hasCT := len(raw), p.ct, p.hasCT
			if p.hasCT && s.ContentType == p.ct {
				raw = append(raw, 0)
			} else {
				raw = binary.AppendUvarint(raw, uint64(len(s.ContentType))+1)
				raw = append(raw, s.ContentType...)
				p.ct, p.hasCT = s.ContentType, true
			}
			if s.Lines == nil {
				raw = p.appendBody(raw, s.Body, &w.lines, &w.prevLines, &w.line)
			} else if out, ok := p.appendLines(raw, s.Lines, &w.line); ok {
				raw = out
			} else {
				p.ct, p.hasCT = ct, hasCT
				raw = p.notRecorded(raw[:mark])
			}
		}
		w.raw = raw
		w.add(typeScrape, raw)
	})
}

// notRecorded appends, for a body given against one this writer does not
// know (a bug), an error saying so rather than a wrong body; the next body
// of the target is whole.
func (p *prevBody) notRecorded(raw []byte) []byte {
	p.store, p.base = nil, false
	raw = append(raw, bodyError)
	return appendString(raw, "body not recorded: its previous body is unknown to the recorder")
}

// advance moves the store to the body a failed scrape carries, if any.
func (p *prevBody) advance(s *sources.Scrape) {
	switch {
	case s.Body != nil:
		if p.store == nil {
			p.store = &lineStore{}
		}
		p.store.setWhole(s.Body)
	case s.Lines != nil:
		if p.store != nil && p.store.fits(s.Lines) {
			p.store.apply(s.Lines)
		} else {
			p.store = nil
		}
	default:
		return
	}
	p.base = false
}

// locked runs fn under the writer's lock, unless there is no recording (a
// nil Writer) or it has failed; rotate first rotates a full file.
func (w *Writer) locked(rotate bool, fn func()) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	if rotate {
		w.rotateIfFull()
	}
	fn()
}

// Body encodings inside scrape and GPU frames.
const (
	bodyWhole = 0
	bodyDelta = 1
	bodyError = 2
)

// appendBody appends body whole or as a delta against the previous one,
// whichever is smaller, and keeps it.
func (p *prevBody) appendBody(dst, body []byte, lines, prevLines *[][]byte, prevBuf *[]byte) []byte {
	start := len(dst)
	whole := !p.base || p.since >= keyEvery
	if !whole {
		*lines = splitLines(*lines, body)
		dst = append(dst, bodyDelta)
		*prevLines = p.store.lines(*prevLines, prevBuf)
		dst = appendDelta(dst, *prevLines, *lines, &p.last, &p.spare)
		if len(dst)-start > len(body) {
			dst, whole = dst[:start], true
		}
	}
	if whole {
		dst = append(dst, bodyWhole)
		dst = append(dst, body...)
		p.since, p.last = 0, nil
	} else {
		p.since++
	}
	if p.store == nil {
		p.store = &lineStore{}
	}
	p.store.setWhole(body)
	p.base = true
	return dst
}

// appendLines appends the body d gives (against the store; fitsIndex(d))
// as a delta from its changed lines, or whole when this file has no base or
// a key frame is due, and moves the store to it. False, with nothing
// appended or moved, when d does not fit the store.
func (p *prevBody) appendLines(dst []byte, d *sources.BodyLines, line *[]byte) ([]byte, bool) {
	start := len(dst)
	whole := !p.base || p.since >= keyEvery
	if whole && !p.store.fits(d) {
		return dst, false
	}
	if !whole {
		var ok bool
		if dst, ok = p.store.appendLinesDelta(append(dst, bodyDelta), d, &p.last, &p.spare, line); !ok {
			return dst[:start], false
		}
		p.since++
	}
	p.store.apply(d)
	if whole || len(dst)-start > p.store.size() {
		dst = append(dst[:start], bodyWhole)
		dst = p.store.appendBody(dst)
		p.since, p.last = 0, nil
	}
	p.base = true
	return dst, true
}

// GPU records one reading of the local GPUs.
func (w *Writer) GPU(s *sources.GPUSnapshot) {
	w.locked(true, func() {
		// Indented, a field a line, so the line delta carries only the
		// fields that changed. encoding/json costs ~0.1 ms a reading of 8
		// GPUs, once a second: 0.01 % of a core, not worth a writer of
		// our own (BENCHMARKS.md, issue 23).
		b, err := json.MarshalIndent(toWire(s), "", " ")
		if err != nil {
			w.fail(err)
			return
		}
		w.raw = w.gpu.appendBody(w.raw[:0], b, &w.lines, &w.prevLines, &w.line)
		w.add(typeGPU, w.raw)
	})
}

// Target records a target that arrived (discovered, or first named by a
// scrape); a known name is ignored.
func (w *Writer) Target(t sources.Target) {
	w.locked(true, func() {
		w.target(t)
	})
}

// target returns the index of t in this file, recording it first when new.
func (w *Writer) target(t sources.Target) int {
	if i, ok := w.index[t.Name]; ok {
		return i
	}
	i := len(w.targets)
	w.targets = append(w.targets, prevBody{})
	w.index[t.Name] = i
	wt := Targets([]sources.Target{t})[0]
	w.hdr.Targets = append(w.hdr.Targets, wt)
	b, err := json.Marshal(wt)
	if err != nil {
		w.fail(err)
		return i
	}
	w.add(typeTarget, b)
	return i
}

// Departed records that a target is gone; a later target of the same name
// is a new one.
func (w *Writer) Departed(name string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	i, ok := w.index[name]
	if w.err != nil || !ok {
		return
	}
	delete(w.index, name)
	w.targets[i] = prevBody{}
	w.add(typeDeparted, binary.AppendUvarint(nil, uint64(i)))
}

// Procs records the process tree found serving the named target.
func (w *Writer) Procs(target string, t sources.ProcTree) {
	w.locked(true, func() {
		i := w.target(sources.Target{Name: target})
		b, err := json.Marshal(wireProcs{Target: i, Root: t.Root, RootName: t.RootName, PIDs: t.PIDs, Note: t.Note, GPUs: t.GPUs,
			MemLimit: t.MemLimit, MemLimitFrom: t.MemLimitFrom})
		if err != nil {
			w.fail(err)
			return
		}
		w.add(typeProcs, b)
	})
}

// Problem records what a source said about itself at t (an empty Text
// clears the Key's), so a replay shows the failures the live run showed.
func (w *Writer) Problem(t time.Time, p sources.Problem) {
	w.locked(true, func() {
		wp := wireProblem{At: t.UTC(), Key: p.Key, Text: p.Text, Feeds: p.Feeds, Fails: p.Fails}
		if w.problems == nil {
			w.problems = map[string]wireProblem{}
		}
		if p.Text == "" {
			delete(w.problems, p.Key)
		} else {
			w.problems[p.Key] = wp
		}
		w.addProblem(wp)
	})
}

func (w *Writer) addProblem(wp wireProblem) {
	b, err := json.Marshal(wp)
	if err != nil {
		w.fail(err)
		return
	}
	w.add(typeProblem, b)
}

// Run records how the run went (opaque JSON: a --once report's elapsed
// time and whether it was interrupted), so a replay reports the same.
func (w *Writer) Run(info []byte) {
	w.locked(false, func() {
		w.add(typeRun, info)
	})
}

// Tick records that the detector evaluated at t; replay evaluates at the
// same instants, so findings fire at the same times.
func (w *Writer) Tick(t time.Time) {
	w.locked(true, func() {
		w.raw = binary.AppendVarint(w.raw[:0], t.UnixNano())
		w.add(typeTick, w.raw)
		// A small fleet's tick is a few hundred bytes, which zstd packs
		// poorly alone: its ticks share a frame for up to batchSpan.
		if len(w.batch) >= batchBytes || t.Sub(w.flushed) >= batchSpan || t.Before(w.flushed) {
			w.flush()
			w.flushed = t
		}
	})
}

// Close writes the end frame and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.flush()
		w.fail(w.writeFrame(typeEnd, []byte("closed"), false))
	}
	if w.file != nil {
		if err := w.file.Close(); err != nil && w.err == nil {
			w.err = err
		}
		w.file = nil
	}
	if w.enc != nil {
		w.enc.Close()
	}
	return w.err
}

func (w *Writer) fail(err error) {
	if err != nil && w.err == nil {
		w.err = err
	}
}

// rotateIfFull moves a file past half of max aside and starts the next.
func (w *Writer) rotateIfFull() {
	if w.path == "" || w.max <= 0 || w.size+int64(len(w.batch)) < w.max/2 {
		return
	}
	w.flush() // encoded against this file's bodies: it ends this file
	w.fail(w.writeFrame(typeEnd, []byte("rotated"), false))
	if err := w.file.Close(); err != nil {
		w.fail(err)
	}
	w.file = nil
	if w.err != nil {
		return
	}
	if err := os.Rename(w.path, w.path+".1"); err != nil {
		w.fail(err)
		return
	}
	w.rotations++
	hdr := w.hdr
	hdr.Part++
	// The new file lists the targets present now (redacted as recorded),
	// in their order; its index is keyed by their live names.
	hdr.Targets = nil
	live := make([]string, len(w.hdr.Targets))
	present := make([]bool, len(w.hdr.Targets))
	for name, i := range w.index {
		live[i], present[i] = name, true
	}
	var now []sources.Target
	var stores []*lineStore // a target's next body may be given against its last
	for i, t := range w.hdr.Targets {
		if present[i] {
			hdr.Targets = append(hdr.Targets, t)
			now = append(now, sources.Target{Name: live[i]})
			stores = append(stores, w.targets[i].store)
		}
	}
	w.fail(w.open(hdr))
	w.indexNames(now)
	for j, st := range stores {
		w.targets[j].store = st
	}
	keys := slices.Sorted(maps.Keys(w.problems))
	for _, k := range keys {
		w.addProblem(w.problems[k])
	}
}

// add appends one record to the batch that the next tick writes.
func (w *Writer) add(typ byte, payload []byte) {
	w.batch = append(w.batch, typ)
	w.batch = binary.AppendUvarint(w.batch, uint64(len(payload)))
	w.batch = append(w.batch, payload...)
	if len(w.batch) >= maxBatch {
		w.flush()
	}
}

// flush writes the pending records as one compressed batch frame: one zstd
// call and one write per batch, and the records of all targets compress
// together.
func (w *Writer) flush() {
	if len(w.batch) == 0 || w.err != nil {
		return
	}
	w.fail(w.writeFrame(typeBatch, w.batch, true))
	w.batch = w.batch[:0]
}

// writeFrame writes one frame with a single write call.
func (w *Writer) writeFrame(typ byte, payload []byte, compress bool) error {
	if compress {
		typ |= flagZstd
		payload = w.enc.EncodeAll(payload, w.zbuf[:0])
		w.zbuf = payload
	}
	f := w.frame[:0]
	f = binary.LittleEndian.AppendUint32(f, uint32(len(payload)))
	crc := crc32.Update(crc32.Update(0, castagnoli, []byte{typ}), castagnoli, payload)
	f = binary.LittleEndian.AppendUint32(f, crc)
	f = append(f, typ)
	f = append(f, payload...)
	w.frame = f
	n, err := w.out.Write(f)
	w.size += int64(n)
	return err
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}
