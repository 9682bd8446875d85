package record

import (
	"errors"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/vtop-dev/vtop/sources"
)

// appendGPUJSON appends what json.MarshalIndent(toWire(s), "", " ") gives
// (wireGPU's numbers spliced in after pci_bus_id), byte for byte, without reflection or the indent pass: a GPU reading is
// recorded at every evaluation, and encoding/json was most of its cost.
// TestGPUJSONMatchesEncodingJSON holds the two together.
func appendGPUJSON(dst []byte, s *sources.GPUSnapshot) ([]byte, error) {
	w := jsonWriter{b: dst}
	w.open('{')
	if err := w.time("time", s.Time); err != nil {
		return dst, err
	}
	w.strOmit("source", s.Source)
	w.boolOmit("simulated", s.Simulated)
	w.strOmit("unavailable", s.Unavailable)
	w.objects("gpus", len(s.GPUs), func(i int) error {
		w.gpu(&s.GPUs[i])
		return nil
	})
	err := w.objects("events", len(s.Events), func(i int) error {
		e := &s.Events[i]
		if err := w.time("time", e.Time); err != nil {
			return err
		}
		w.int("gpu", int64(e.GPU))
		w.int("xid", int64(e.XID))
		w.str("text", e.Text)
		w.str("level", e.Level)
		return nil
	})
	if err != nil {
		return dst, err
	}
	w.strs("notes", s.Notes)
	w.close('}')
	return w.b, nil
}

// gpu writes a GPU object's members.
func (w *jsonWriter) gpu(g *sources.GPU) {
	w.int("index", int64(g.Index))
	w.str("name", g.Name)
	w.str("uuid", g.UUID)
	w.str("pci_bus_id", g.PCIBusID)
	for i := range sources.GPUFields {
		w.num(sources.GPUFields[i].Wire, *sources.GPUFields[i].At(g))
	}
	w.strs("clock_events", g.ClockEvents)
	w.key("clock_event_bits")
	w.b = strconv.AppendUint(w.b, uint64(g.ClockEventBits), 10)
	w.boolOmit("remap_pending", g.RemapPending)
	w.boolOmit("remap_failed", g.RemapFailed)
	w.int("mig", int64(int8(g.MIG)))
	w.objects("processes", len(g.Processes), func(i int) error {
		p := &g.Processes[i]
		w.int("pid", int64(p.PID))
		w.str("name", p.Name)
		w.num("used_bytes", p.UsedBytes)
		return nil
	})
	w.strOmit("problem", g.Problem)
	w.strs("fields_missing", g.FieldsMissing)
	w.boolOmit("throttled", g.Throttled)
	w.strOmit("simulated_reason", g.SimulatedReason)
}

// objects writes k's array of n objects, unless n is 0; obj writes the
// members of the i-th.
func (w *jsonWriter) objects(k string, n int, obj func(i int) error) error {
	if n == 0 {
		return nil
	}
	w.key(k)
	w.open('[')
	for i := range n {
		w.elem()
		w.open('{')
		if err := obj(i); err != nil {
			return err
		}
		w.close('}')
	}
	w.close(']')
	return nil
}

// jsonWriter writes JSON indented as MarshalIndent(v, "", " ") does. It
// never writes an empty object or array (the record has none).
type jsonWriter struct {
	b     []byte
	depth int
	first bool // no member written yet at this depth
}

func (w *jsonWriter) newline() {
	w.b = append(w.b, '\n')
	for range w.depth {
		w.b = append(w.b, ' ')
	}
}

func (w *jsonWriter) open(c byte) {
	w.b = append(w.b, c)
	w.depth++
	w.first = true
}

func (w *jsonWriter) close(c byte) {
	w.depth--
	w.newline()
	w.b = append(w.b, c)
	w.first = false
}

// elem starts an array element.
func (w *jsonWriter) elem() {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	w.newline()
}

func (w *jsonWriter) key(k string) {
	w.elem()
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, `": `...)
}

func (w *jsonWriter) int(k string, v int64) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
}

// num writes a wire num: null for NaN, "+Inf" and "-Inf".
func (w *jsonWriter) num(k string, f float64) {
	w.key(k)
	switch {
	case math.IsNaN(f):
		w.b = append(w.b, "null"...)
	case math.IsInf(f, 1):
		w.b = append(w.b, `"+Inf"`...)
	case math.IsInf(f, -1):
		w.b = append(w.b, `"-Inf"`...)
	default:
		w.b = strconv.AppendFloat(w.b, f, 'g', -1, 64)
	}
}

func (w *jsonWriter) str(k, s string) {
	w.key(k)
	w.b = appendJSONString(w.b, s)
}

func (w *jsonWriter) strOmit(k, s string) {
	if s != "" {
		w.str(k, s)
	}
}

func (w *jsonWriter) boolOmit(k string, v bool) {
	if v {
		w.key(k)
		w.b = append(w.b, "true"...)
	}
}

func (w *jsonWriter) strs(k string, ss []string) {
	if len(ss) == 0 {
		return
	}
	w.key(k)
	w.open('[')
	for _, s := range ss {
		w.elem()
		w.b = appendJSONString(w.b, s)
	}
	w.close(']')
}

var errJSONTime = errors.New("Time.MarshalJSON: year outside of range [0,9999]")

// time writes t as time.Time's MarshalJSON does, refusing the same years.
func (w *jsonWriter) time(k string, t time.Time) error {
	if y := t.Year(); y < 0 || y > 9999 {
		return errJSONTime
	}
	w.key(k)
	w.b = append(w.b, '"')
	w.b = t.AppendFormat(w.b, time.RFC3339Nano)
	w.b = append(w.b, '"')
	return nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does: HTML characters, U+2028
// and U+2029 escaped, invalid UTF-8 as U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
