package record

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
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
// OpenMetrics text with the scrape's start time as its timestamp, in time
// order, ending with "# EOF": the input `promtool tsdb
// create-blocks-from openmetrics` takes. Each series gets the labels a
// Prometheus scrape would add, job="vllm" and instance=<target>, unless it
// has its own. Samples carry no TYPE metadata (a family's samples are
// spread over time, which OpenMetrics metadata cannot describe); PromQL's
// rate() and histogram_quantile() need none.
func ExportOpenMetrics(w io.Writer, paths []string) (ExportStats, error) {
	var st ExportStats
	rd := make([]*Reader, 0, len(paths))
	defer func() {
		for _, r := range rd {
			r.Close()
		}
	}()
	bw := bufio.NewWriterSize(w, 256<<10)
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
			ts := strconv.FormatInt(ms/1000, 10) + "." + fmt.Sprintf("%03d", ms%1000)
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
				if e != textparse.EntrySeries {
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
					bw.Write(line)
					st.Samples++
				} else {
					st.Skipped++
				}
			}
		}
	}
	bw.WriteString("# EOF\n")
	return st, bw.Flush()
}

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
