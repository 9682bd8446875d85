package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/vtop-dev/vtop/record"
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
	if st.Stopped != nil {
		fmt.Fprintf(stderr, "vtop export: %v\n", st.Stopped)
	}
	fmt.Fprintf(stderr, "vtop export: %d samples from %d scrapes (%d left out)\n", st.Samples, st.Scrapes, st.Skipped)
	return 0
}
