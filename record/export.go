package record

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/vtop-dev/vtop/sources"
)

// ExportStats counts what an export wrote.
type ExportStats struct {
	Scrapes, Samples, Skipped int
	Stopped                   error // the damage where the recording stopped, or nil
}

var (
	validName  = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	validLabel = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// ExportOpenMetrics writes every sample of every recorded scrape as
// OpenMetrics text with the scrape's start time as its timestamp, ending
// with "# EOF": the input `promtool tsdb create-blocks-from openmetrics`
// takes. Each series gets the labels a Prometheus scrape would add,
// job="vllm" and instance=<target>, unless it has its own. The GPU
// readings go with them as vtop_gpu_* gauges (job="vtop", the device's
// index on its host in gpu, its uuid, and its host when read from
// elsewhere), unknown readings left out. Samples are grouped by family,
// each under its # HELP and # TYPE as the exposition declared them (a
// counter's family without its _total), so the types survive the
// backfill; within a family they are in time order.
func ExportOpenMetrics(w io.Writer, paths []string) (ExportStats, error) {
	var st ExportStats
	rd := make([]*Reader, 0, len(paths))
	fams, err := newFamilies()
	if err != nil {
		return st, err
	}
	defer fams.close()
	defer func() {
		for _, r := range rd {
			r.Close()
		}
	}()
	lastMs := map[string]int64{} // per target: a series' timestamps must rise
	var lset labels.Labels
	var line []byte
	seen := map[string]struct{}{}
	for _, path := range paths {
		r, err := Open(path)
		if err != nil {
			return st, err
		}
		rd = append(rd, r)
		for {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var d *Damage
				if errors.As(err, &d) && d.Unfinished && path != paths[len(paths)-1] {
					break // a rotated file cut at a frame boundary: go on with the next
				}
				st.Stopped = err
				break
			}
			if ev.Kind == KindGPU {
				if err := fams.gpu(ev, &st); err != nil {
					return st, err
				}
				continue
			}
			if ev.Kind != KindScrape || ev.Err != "" {
				continue
			}
			target := r.Header().Targets[ev.Target].Name
			ms := ev.Time.UnixMilli()
			if last, ok := lastMs[target]; ok && ms <= last {
				st.Skipped++ // two scrapes in one millisecond
				continue
			}
			lastMs[target] = ms
			ts := omTime(ms)
			p, _ := textparse.New(ev.Body, ev.ContentType, labels.NewSymbolTable(), textparse.ParserOptions{FallbackContentType: "text/plain"})
			if p == nil {
				st.Skipped++
				continue
			}
			st.Scrapes++
			clear(seen)
			for {
				e, err := p.Next()
				if err != nil {
					break // io.EOF, or the body does not parse further: as vtop saw it
				}
				switch e {
				case textparse.EntryType:
					name, typ := p.Type()
					fams.declare(string(name), string(typ), "")
					continue
				case textparse.EntryHelp:
					name, help := p.Help()
					fams.declare(string(name), "", string(help))
					continue
				case textparse.EntrySeries:
				default:
					continue
				}
				series, _, v := p.Series()
				if _, dup := seen[string(series)]; dup {
					continue
				}
				seen[string(series)] = struct{}{}
				p.Labels(&lset)
				if l, ok := appendSample(line[:0], lset, target, v, ts); ok {
					line = l
					if err := fams.write(lset.Get(model.MetricNameLabel), line); err != nil {
						return st, err
					}
					st.Samples++
				} else {
					st.Skipped++
				}
			}
		}
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	if err := fams.writeTo(bw); err != nil {
		return st, err
	}
	bw.WriteString("# EOF\n")
	return st, bw.Flush()
}

func omTime(ms int64) string {
	return strconv.FormatInt(ms/1000, 10) + "." + fmt.Sprintf("%03d", ms%1000)
}

// families holds each family's samples apart until the end (in files: an
// hour of a fleet is far more than memory should hold), with what the
// expositions declared of it.
type families struct {
	dir   string
	order []string
	fam   map[string]*family
	meta  map[string]*family // declared, by the name TYPE and HELP gave
	gpuMs map[string]int64   // per device: a series' timestamps must rise
}

type family struct {
	name, typ, help string
	f               *os.File
	w               *bufio.Writer
}

func newFamilies() (*families, error) {
	dir, err := os.MkdirTemp("", "vtop-export-")
	if err != nil {
		return nil, err
	}
	return &families{dir: dir, fam: map[string]*family{}, meta: map[string]*family{}, gpuMs: map[string]int64{}}, nil
}

func (fs *families) close() {
	for _, f := range fs.fam {
		if f.f != nil {
			f.f.Close()
		}
	}
	os.RemoveAll(fs.dir)
}

// declare notes a TYPE or HELP line (the first of each wins).
func (fs *families) declare(name, typ, help string) {
	m := fs.meta[name]
	if m == nil {
		m = &family{name: name}
		fs.meta[name] = m
	}
	if m.typ == "" {
		m.typ = typ
	}
	if m.help == "" {
		m.help = help
	}
}

// familyOf is the declared family a sample name belongs to: itself, or
// without a histogram's or summary's or counter's suffix.
func (fs *families) familyOf(name string) *family {
	if m := fs.meta[name]; m != nil {
		return m
	}
	for _, suf := range []string{"_bucket", "_sum", "_count", "_total", "_created", "_info"} {
		if base, ok := strings.CutSuffix(name, suf); ok {
			if m := fs.meta[base]; m != nil {
				return m
			}
		}
	}
	return &family{name: name}
}

func (fs *families) write(sample string, line []byte) error {
	m := fs.familyOf(sample)
	f := fs.fam[m.name]
	if f == nil {
		file, err := os.CreateTemp(fs.dir, "family-")
		if err != nil {
			return err
		}
		f = &family{name: m.name, typ: m.typ, help: m.help, f: file, w: bufio.NewWriterSize(file, 32<<10)}
		fs.fam[m.name] = f
		fs.order = append(fs.order, m.name)
	}
	_, err := f.w.Write(line)
	return err
}

// gpu writes a GPU reading's known numbers as vtop_gpu_* gauges.
func (fs *families) gpu(ev *Event, st *ExportStats) error {
	ms := ev.Time.UnixMilli()
	ts := omTime(ms)
	var line []byte
	for i := range ev.GPU.GPUs {
		g := &ev.GPU.GPUs[i]
		dev := g.Host + "/" + g.UUID + "/" + strconv.Itoa(g.Index)
		if last, ok := fs.gpuMs[dev]; ok && ms <= last {
			st.Skipped++
			continue
		}
		fs.gpuMs[dev] = ms
		idx := g.Index
		if g.Host != "" {
			idx = g.HostIndex
		}
		b := labels.NewBuilder(labels.EmptyLabels())
		b.Set("gpu", strconv.Itoa(idx))
		b.Set("uuid", g.UUID)
		b.Set("job", "vtop")
		inst := g.Host
		if inst == "" {
			inst = ev.GPU.Source
		}
		b.Set("instance", inst)
		if g.MIGProfile != "" {
			b.Set("mig_profile", g.MIGProfile)
		}
		for k := range sources.GPUFields {
			fld := &sources.GPUFields[k]
			v := *fld.At(g)
			if math.IsNaN(v) {
				continue // unknown is absent, never a zero
			}
			name := "vtop_gpu_" + fld.JSON
			b.Set(model.MetricNameLabel, name)
			fs.declare(name, "gauge", "GPU "+fld.Label+" ("+fld.Unit+"), as vtop read it")
			l, ok := appendSample(line[:0], b.Labels(), inst, v, ts)
			if !ok {
				st.Skipped++
				continue
			}
			line = l
			if err := fs.write(name, line); err != nil {
				return err
			}
			st.Samples++
		}
	}
	return nil
}

// writeTo writes each family under its HELP and TYPE, in the order first seen.
func (fs *families) writeTo(w *bufio.Writer) error {
	for _, name := range fs.order {
		f := fs.fam[name]
		if err := f.w.Flush(); err != nil {
			return err
		}
		om := name
		typ := f.typ
		switch typ {
		case "", "untyped":
			typ = "unknown"
		case "counter":
			om = strings.TrimSuffix(name, "_total") // OpenMetrics names the family without it
		}
		if f.help != "" {
			w.WriteString("# HELP " + om + " " + helpEscaper.Replace(f.help) + "\n")
		}
		w.WriteString("# TYPE " + om + " " + typ + "\n")
		if _, err := f.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.Copy(w, f.f); err != nil {
			return err
		}
	}
	return nil
}

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

// appendSample writes one OpenMetrics sample line; false when a name is not
// one OpenMetrics can spell.
func appendSample(b []byte, ls labels.Labels, target string, v float64, ts string) ([]byte, bool) {
	name := ls.Get(model.MetricNameLabel)
	if !validName.MatchString(name) {
		return b, false
	}
	b = append(b, name...)
	b = append(b, '{')
	ok, hasJob, hasInst := true, false, false
	first := true
	ls.Range(func(l labels.Label) {
		if l.Name == model.MetricNameLabel {
			return
		}
		if !validLabel.MatchString(l.Name) {
			ok = false
			return
		}
		hasJob = hasJob || l.Name == "job"
		hasInst = hasInst || l.Name == "instance"
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendLabel(b, l.Name, l.Value)
	})
	if !hasJob {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendLabel(b, "job", "vllm")
	}
	if !hasInst {
		if !first {
			b = append(b, ',')
		}
		b = appendLabel(b, "instance", target)
	}
	b = append(b, "} "...)
	switch {
	case math.IsNaN(v):
		b = append(b, "NaN"...)
	case math.IsInf(v, 1):
		b = append(b, "+Inf"...)
	case math.IsInf(v, -1):
		b = append(b, "-Inf"...)
	default:
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	b = append(b, ' ')
	b = append(b, ts...)
	b = append(b, '\n')
	return b, ok
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, `="`...)
	b = append(b, labelEscaper.Replace(value)...)
	return append(b, '"')
}
