package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/vtop-dev/vtop/record"
	"github.com/vtop-dev/vtop/sources"
)

func init() { subcommands["export"] = runExport }

const exportUsage = `Usage:
  vtop export --format openmetrics [-o OUT] FILE [FILE]

Writes every recorded scrape's samples with their scrape times as OpenMetrics
text, for Prometheus and Grafana:

  vtop export --format openmetrics -o incident.om incident.vtop
  promtool tsdb create-blocks-from openmetrics incident.om ./data

Series get job="vllm" and instance=<target> as a Prometheus scrape would.
A rotated recording is FILE.1 FILE, oldest first.

Flags:
`

// runExport is `vtop export`.
func runExport(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := pflag.NewFlagSet("vtop export", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("format", "openmetrics", "output format: openmetrics")
	fs.StringP("output", "o", "-", "output file (- for stdout)")
	fs.BoolP("help", "h", false, "show this help")
	err := fs.Parse(args)
	if h, _ := fs.GetBool("help"); h || errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(stdout, exportUsage+fs.FlagUsages())
		return 0
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "vtop export: %v\n", err)
		return 1
	}
	if err != nil {
		return fail(err)
	}
	if f, _ := fs.GetString("format"); f != "openmetrics" {
		return fail(fmt.Errorf("--format %q: only openmetrics", f))
	}
	if fs.NArg() == 0 {
		return fail(errors.New("name the recording: vtop export --format openmetrics FILE"))
	}
	out := stdout
	if isTerminal(stdout) {
		// Label values are written as recorded (OpenMetrics escapes only
		// quotes, backslashes and newlines): on a terminal a crafted
		// recording could set its title or write the clipboard.
		sw := &saneWriter{w: stdout}
		defer sw.Flush()
		out = sw
	}
	if o, _ := fs.GetString("output"); o != "-" {
		f, err := os.Create(o)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		out = f
	}
	st, err := record.ExportOpenMetrics(out, fs.Args())
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(stderr, "vtop export: %d samples from %d scrapes (%d left out)\n", st.Samples, st.Scrapes, st.Skipped)
	if st.Stopped != nil {
		// What came before the damage was written; the export is still
		// incomplete, and a script must be able to tell.
		fmt.Fprintf(stderr, "vtop export: %v (the export stops there)\n", st.Stopped)
		return 1
	}
	return 0
}

// saneWriter passes text on a line at a time with every control, format
// and invalid byte escaped (sources.Sanitize), for a terminal.
type saneWriter struct {
	w    io.Writer
	line []byte
	err  error
}

func (s *saneWriter) Write(p []byte) (int, error) {
	for _, c := range p {
		if c != '\n' {
			s.line = append(s.line, c)
			continue
		}
		s.emit()
		if s.err == nil {
			_, s.err = io.WriteString(s.w, "\n")
		}
	}
	return len(p), s.err
}

func (s *saneWriter) emit() {
	if s.err == nil && len(s.line) > 0 {
		_, s.err = io.WriteString(s.w, sources.Sanitize(string(s.line), 0))
	}
	s.line = s.line[:0]
}

// Flush writes a last line without its newline.
func (s *saneWriter) Flush() error {
	s.emit()
	return s.err
}
