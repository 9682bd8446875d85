package record

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/vtop-dev/vtop/sources"
)

// Kind is what an Event carries.
type Kind uint8

const (
	KindScrape Kind = iota + 1
	KindGPU
	KindProcs
	KindTick
	KindTarget   // a target arrived; Target is its index, TargetInfo what it is
	KindDeparted // a target is gone; Target is its index, TargetInfo what it was
	KindRun      // how the run went: Body is the recorder's JSON
)

// Event is one recorded frame, decoded. Body is valid until the next call
// of Next; text fields are sanitized.
type Event struct {
	Kind        Kind
	Time        time.Time // scrape start, GPU reading, or evaluation
	Target      int       // scrapes and process trees
	Duration    time.Duration
	ContentType string
	Body        []byte
	Err         string // a failed scrape's error
	GPU         sources.GPUSnapshot
	Procs       sources.ProcTree
	TargetInfo  Target
}

// Damage says where and why reading stopped before a clean end. Everything
// before Offset was read.
type Damage struct {
	File     string
	Offset   int64     // byte offset of the frame that could not be read
	Frame    int       // its index (the header is frame 0)
	LastTime time.Time // the newest time read before it; zero when none
	Reason   string
	// Unfinished is a file that stops at a frame boundary without an end
	// frame: the writer was killed, or is still writing. Nothing is corrupt.
	Unfinished bool
}

func (d *Damage) Error() string {
	at := ""
	if !d.LastTime.IsZero() {
		at = ", after " + d.LastTime.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	return fmt.Sprintf("recording %s: stopped at byte %d (frame %d%s): %s", d.File, d.Offset, d.Frame, at, d.Reason)
}

// Reader reads one recording file.
type Reader struct {
	name string
	r    *bufio.Reader
	c    io.Closer
	off  int64
	n    int // frames read
	hdr  Header
	dec  *zstd.Decoder
	last time.Time
	end  string // the end frame's reason once read
	stop error  // sticky: damage or io.EOF

	version byte // the file's format
	targets []lastBody
	gpu     lastBody
	buf     []byte // frame payload
	sub     []byte // the unread records of a batch frame
	subOff  int64  // that frame's offset
	zbuf    []byte // decompressed payload
	body    []byte
}

// Open opens a recording file and reads its header.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.c = f
	return r, nil
}

// NewReader reads a recording from in; name is used in messages.
func NewReader(in io.Reader, name string) (*Reader, error) {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecoded),
		zstd.WithDecoderMaxWindow(maxDecoded))
	if err != nil {
		return nil, err
	}
	r := &Reader{name: name, r: bufio.NewReaderSize(in, 64<<10), dec: dec}
	var m [8]byte
	if _, err := io.ReadFull(r.r, m[:]); err != nil || !bytes.Equal(m[:7], magic[:7]) {
		return nil, fmt.Errorf("%s: not a vtop recording", name)
	}
	if m[7] == 0 || m[7] > Version {
		return nil, fmt.Errorf("%s: recording format %d; this vtop reads format 1 to %d", name, m[7], Version)
	}
	r.off, r.version = int64(len(m)), m[7]
	typ, payload, err := r.frame()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %v", name, err)
	}
	if typ != typeHeader {
		return nil, fmt.Errorf("%s: the first frame is not a header", name)
	}
	if err := json.Unmarshal(payload, &r.hdr); err != nil {
		return nil, fmt.Errorf("%s: header: %v", name, err)
	}
	// The whole header, the Prometheus server's URL and selector too (the
	// recorded configuration is raw JSON: its reader sanitizes it).
	sources.SanitizeAll(&r.hdr, sources.MaxLabelLen)
	if len(r.hdr.Targets) > maxTargets {
		return nil, fmt.Errorf("%s: header: more than %d targets", name, maxTargets)
	}
	// A window or interval vtop never records: replayed, it would set the
	// engine past the history it keeps (0 is the default, as live).
	if w := time.Duration(r.hdr.Window); w < 0 || w > sources.MaxWindow {
		return nil, fmt.Errorf("%s: header: window %s is not between 0 and %s, the history vtop keeps", name, w, sources.MaxWindow)
	}
	if i := time.Duration(r.hdr.Interval); i < 0 || i > sources.MaxInterval {
		return nil, fmt.Errorf("%s: header: interval %s is not between 0 and %s", name, i, sources.MaxInterval)
	}
	r.targets = make([]lastBody, len(r.hdr.Targets))
	return r, nil
}

// Header returns the file's header, with the targets that arrived so far.
func (r *Reader) Header() Header { return r.hdr }

// Close releases the file.
func (r *Reader) Close() error {
	r.dec.Close()
	if r.c != nil {
		return r.c.Close()
	}
	return nil
}

// Next returns the next event. It returns io.EOF after the end frame, and
// a *Damage when the file is cut or corrupt (everything before it was
// returned).
func (r *Reader) Next() (*Event, error) {
	for r.stop == nil {
		start := r.off
		var typ byte
		var payload []byte
		var err error
		if len(r.sub) > 0 {
			start = r.subOff
			typ, payload, err = r.record()
		} else {
			typ, payload, err = r.frame()
			if err == nil && typ == typeBatch {
				r.sub, r.subOff = payload, start
				r.n++
				continue
			}
		}
		if err != nil {
			r.stop = r.damage(start, err)
			break
		}
		ev, err := r.decode(typ, payload)
		if err != nil {
			r.stop = r.damage(start, err)
			break
		}
		if ev != nil {
			if ev.Time.After(r.last) {
				r.last = ev.Time
			}
			r.n++
			return ev, nil
		}
		r.n++
	}
	return nil, r.stop
}

// record takes the next record out of a batch frame.
func (r *Reader) record() (byte, []byte, error) {
	typ := r.sub[0]
	l, n := binary.Uvarint(r.sub[1:])
	if n <= 0 || l > uint64(len(r.sub)-1-n) {
		r.sub = nil
		return 0, nil, errors.New("bad record in a batch frame")
	}
	p := r.sub[1+n : 1+n+int(l)]
	r.sub = r.sub[1+n+int(l):]
	if typ == typeBatch || typ == typeHeader || typ == typeEnd {
		r.sub = nil
		return 0, nil, fmt.Errorf("a %q record inside a batch", typ)
	}
	return typ, p, nil
}

var errUnfinished = errors.New("the file ends without an end frame (vtop was killed, or is still recording)")

func (r *Reader) damage(off int64, err error) error {
	if err == io.EOF {
		return err
	}
	return &Damage{File: r.name, Offset: off, Frame: r.n, LastTime: r.last, Reason: err.Error(),
		Unfinished: errors.Is(err, errUnfinished)}
}

// frame reads one frame and checks it; payload is decompressed.
func (r *Reader) frame() (byte, []byte, error) {
	if r.end != "" {
		return 0, nil, io.EOF
	}
	var h [frameHead]byte
	n, err := io.ReadFull(r.r, h[:])
	if err == io.EOF {
		return 0, nil, errUnfinished
	}
	if err != nil {
		return 0, nil, fmt.Errorf("truncated frame header (%d of %d bytes)", n, frameHead)
	}
	size := binary.LittleEndian.Uint32(h[0:])
	if size > maxFrame {
		return 0, nil, fmt.Errorf("frame length %d over the %d limit (corrupt length)", size, maxFrame)
	}
	if cap(r.buf) < int(size) {
		r.buf = make([]byte, size)
	}
	r.buf = r.buf[:size]
	if n, err := io.ReadFull(r.r, r.buf); err != nil {
		return 0, nil, fmt.Errorf("truncated frame (%d of %d bytes)", n, size)
	}
	typ := h[8]
	crc := crc32.Update(crc32.Update(0, castagnoli, []byte{typ}), castagnoli, r.buf)
	if crc != binary.LittleEndian.Uint32(h[4:]) {
		return 0, nil, errors.New("checksum mismatch (corrupt frame)")
	}
	r.off += int64(frameHead) + int64(size)
	payload := r.buf
	if typ&flagZstd != 0 {
		r.zbuf, err = r.dec.DecodeAll(r.buf, r.zbuf[:0])
		if err != nil {
			return 0, nil, fmt.Errorf("zstd: %v", err)
		}
		payload = r.zbuf
	}
	return typ &^ flagZstd, payload, nil
}

// decode turns a frame into an event; nil for frames that carry none.
func (r *Reader) decode(typ byte, p []byte) (*Event, error) {
	switch typ {
	case typeEnd:
		r.end = san(string(p))
		if r.end == "" {
			r.end = "closed"
		}
		return nil, nil
	case typeTick:
		ns, n := binary.Varint(p)
		if n <= 0 || n != len(p) {
			return nil, errors.New("bad tick frame")
		}
		return &Event{Kind: KindTick, Time: time.Unix(0, ns)}, nil
	case typeScrape:
		return r.scrape(p)
	case typeGPU:
		b, err := r.gpu.readBody(p, &r.body, r.version)
		if err != nil {
			return nil, fmt.Errorf("GPU frame: %v", err)
		}
		var w wireSnapshot
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, fmt.Errorf("GPU frame: %v", err)
		}
		return &Event{Kind: KindGPU, Time: w.Time, GPU: fromWire(&w)}, nil
	case typeProcs:
		var w wireProcs
		if err := json.Unmarshal(p, &w); err != nil {
			return nil, fmt.Errorf("process frame: %v", err)
		}
		if w.Target < 0 || w.Target >= len(r.targets) {
			return nil, fmt.Errorf("process frame for target %d of %d", w.Target, len(r.targets))
		}
		if w.MemLimit < 0 {
			return nil, fmt.Errorf("process frame for target %d: memory limit %v", w.Target, w.MemLimit)
		}
		return &Event{Kind: KindProcs, Time: r.last, Target: w.Target,
			Procs: sources.ProcTree{Root: w.Root, RootName: san(w.RootName), PIDs: w.PIDs, Note: san(w.Note), GPUs: sanAll(w.GPUs),
				MemLimit: w.MemLimit, MemLimitFrom: san(w.MemLimitFrom)}}, nil
	case typeTarget:
		var t Target
		if err := json.Unmarshal(p, &t); err != nil {
			return nil, fmt.Errorf("target frame: %v", err)
		}
		if len(r.targets) >= maxTargets {
			return nil, fmt.Errorf("more than %d targets", maxTargets)
		}
		sources.SanitizeAll(&t, sources.MaxLabelLen)
		r.hdr.Targets = append(r.hdr.Targets, t)
		r.targets = append(r.targets, lastBody{})
		return &Event{Kind: KindTarget, Time: r.last, Target: len(r.targets) - 1, TargetInfo: t}, nil
	case typeRun:
		return &Event{Kind: KindRun, Time: r.last, Body: p}, nil
	case typeDeparted:
		i, n := binary.Uvarint(p)
		if n <= 0 || n != len(p) || i >= uint64(len(r.targets)) {
			return nil, errors.New("bad departure frame")
		}
		r.targets[i] = lastBody{}
		return &Event{Kind: KindDeparted, Time: r.last, Target: int(i), TargetInfo: r.hdr.Targets[i]}, nil
	case typeHeader:
		return nil, errors.New("a second header")
	}
	return nil, nil // a frame type from a newer writer: skipped
}

func (r *Reader) scrape(p []byte) (*Event, error) {
	bad := errors.New("bad scrape frame")
	i, n := binary.Uvarint(p)
	if n <= 0 || i >= uint64(len(r.targets)) {
		return nil, fmt.Errorf("scrape frame for target %d of %d", i, len(r.targets))
	}
	p = p[n:]
	ns, n := binary.Varint(p)
	if n <= 0 {
		return nil, bad
	}
	p = p[n:]
	d, n := binary.Uvarint(p)
	if n <= 0 || d > uint64(time.Hour) {
		return nil, bad
	}
	p = p[n:]
	ev := &Event{Kind: KindScrape, Target: int(i), Time: time.Unix(0, ns), Duration: time.Duration(d)}
	if len(p) > 0 && p[0] == bodyError {
		s, rest, ok := readString(p[1:])
		if !ok || len(rest) != 0 {
			return nil, bad
		}
		ev.Err = sources.Sanitize(s, 200)
		return ev, nil
	}
	pb := &r.targets[i]
	l, n := binary.Uvarint(p)
	if n <= 0 || l > uint64(len(p)-n) {
		return nil, bad
	}
	if l > 0 {
		pb.ct = string(p[n : n+int(l)-1])
	} else if pb.lines == nil {
		return nil, errors.New("a scrape with no Content-Type")
	}
	ev.ContentType = pb.ct
	b, err := pb.readBody(p[n+int(max(l, 1))-1:], &r.body, r.version)
	if err != nil {
		return nil, fmt.Errorf("scrape of %s: %v", r.hdr.Targets[i].Name, err)
	}
	ev.Body = b
	return ev, nil
}

// lastBody is the last body read for one target (or the GPUs), split into
// lines: the next delta is decoded against it.
type lastBody struct {
	body  []byte
	lines [][]byte
	last  changedSet // the lines the last delta changed
	ct    string     // the last Content-Type (scrapes)
}

// readBody decodes a whole or delta body against the previous one and
// remembers the result. The returned slice is prev's own, valid until the
// next body of any target is read.
func (p *lastBody) readBody(enc []byte, scratch *[]byte, version byte) ([]byte, error) {
	if len(enc) == 0 {
		return nil, errors.New("empty body")
	}
	switch enc[0] {
	case bodyWhole:
		p.body, p.last = append(p.body[:0], enc[1:]...), nil
	case bodyDelta:
		if p.lines == nil {
			return nil, errors.New("a delta with no previous body")
		}
		var err error
		if *scratch, err = applyDelta(*scratch, p.lines, enc[1:], maxDecoded, &p.last, version); err != nil {
			return nil, err
		}
		// The new body is prev's now; the old one (its lines are about
		// to be split afresh) is the next delta's scratch: no copy.
		p.body, *scratch = *scratch, p.body
	default:
		return nil, fmt.Errorf("unknown body encoding %d", enc[0])
	}
	p.lines = splitLines(p.lines, p.body)
	return p.body, nil
}

func readString(p []byte) (string, []byte, bool) {
	l, n := binary.Uvarint(p)
	if n <= 0 || l > uint64(len(p)-n) {
		return "", nil, false
	}
	return string(p[n : n+int(l)]), p[n+int(l):], true
}
