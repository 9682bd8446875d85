// Command vtop is a terminal dashboard for vLLM: it polls /metrics of one or
// many engines and the local GPUs, and says what is wrong and what to change.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// version is set at build time with -ldflags "-X main.version=…"; a
// `go install`ed binary reports its module version instead.
var version = "dev"

func vtopVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(version, bi)
}

// versionOf: the -X stamp; else the module version (`go install …@v1.2.3`,
// or an untagged module's pseudo-version); else the VCS revision the build
// recorded ("dev-1a2b3c4d5e6f-dirty"), as the README says, also where Go
// stamped a checkout's build with a pseudo-version of its own; else "dev".
func versionOf(stamped string, bi *debug.BuildInfo) string {
	if stamped != "dev" || bi == nil {
		return stamped
	}
	var rev string
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			rev = s.Value
		}
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" && !(rev != "" && pseudoVersion.MatchString(v)) {
		return v
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return stamped
	}
	v := "dev-" + rev[:min(12, len(rev))]
	if dirty {
		v += "-dirty"
	}
	return v
}

// pseudoVersion is Go's v0.0.0-yyyymmddhhmmss-abcdefabcdef (or
// vX.Y.Z-pre.0.yyyymmddhhmmss-…), "+dirty" when the checkout was.
var pseudoVersion = regexp.MustCompile(`[-.]\d{14}-[0-9a-f]{12}(\+dirty)?$`)

const usageHead = `vtop — what is wrong with your vLLM servers, and what to change.

Usage:
  vtop [flags] [TARGET ...]      watch targets (TUI; a report when stdout is not a terminal)
  vtop --once [flags] [TARGET ...]  poll for one window, print a report, exit with a status
  vtop --demo                    watch a built-in simulated fleet (no GPU or vLLM needed)
  vtop sim [flags]               serve a simulated vLLM fleet for other tools
  vtop replay [--once [--at TIME]] FILE   a --record file in the TUI, or its report at a moment
  vtop export --format openmetrics FILE   a --record file for promtool's backfill
  vtop rules [--format text|markdown|prometheus]  print the diagnosis rules

A TARGET is host:port, http(s)://host:port, or a full URL; the path defaults
to /metrics. dns+host:port is every A/AAAA record of host, dnssrv+_name._tcp.host
every SRV target (asked again every 30 s). With no target vtop reads
$VTOP_TARGETS, the config file, then localhost:8000 (vLLM's default).
--prometheus URL reads the fleet, with its history, from a Prometheus-compatible
server instead.

Examples:
  vtop                                   # the vLLM server on this machine
  vtop gpu-node-1:8000 gpu-node-2:8000   # a small fleet
  vtop --once -o json localhost:8000     # for scripts; exit status 0/1/2/3
  VTOP_BEARER_TOKEN=... vtop https://llm.internal/metrics
  vtop --demo                            # see it work with no setup

Flags:
`

func main() {
	if os.Getenv(guardEnv) == "1" {
		os.Exit(termGuardMain()) // the terminal's watcher (termguard.go)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// run is main without the process: it returns the exit status.
func run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) > 0 {
		if cmd, ok := subcommands[args[0]]; ok {
			return cmd(args[1:], stdout, stderr, getenv)
		}
	}
	o, fs, err := resolve(args, getenv)
	if help, _ := fs.GetBool("help"); help || errors.Is(err, pflag.ErrHelp) {
		printUsage(stdout, fs)
		return 0
	}
	if v, _ := fs.GetBool("version"); v && err == nil {
		fmt.Fprintf(stdout, "vtop %s\n", vtopVersion())
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "vtop: %v\n", err)
		fmt.Fprintln(stderr, "Run 'vtop --help' for usage.")
		return 3
	}
	logger, closeLog, err := openLog(o.logFile)
	if err != nil {
		fmt.Fprintf(stderr, "vtop: %v\n", err)
		return 3
	}
	defer closeLog()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if limit := setMemoryLimit(o, getenv); limit > 0 {
		logger.Debug("memory limit", "bytes", limit)
		go followLiveHeap(ctx, limit, 10*time.Second)
	}
	if o.logFile != "" {
		go logRuntime(ctx, logger, runtimeLogEvery)
	}
	if o.demo {
		return runDemo(ctx, o, stdout, stderr, logger)
	}
	if o.once || !isTerminal(stdout) {
		return runOnce(ctx, o, stdout, stderr, logger)
	}
	if n := setUIProcs(getenv); n > 0 {
		logger.Debug("GOMAXPROCS for the screen", "procs", n)
	}
	return runTUI(ctx, o, stdout, stderr, logger)
}

// subcommands are set by the files that implement them.
var subcommands = map[string]func(args []string, stdout, stderr io.Writer, getenv func(string) string) int{}

func printUsage(w io.Writer, fs *pflag.FlagSet) {
	fmt.Fprint(w, usageHead)
	fmt.Fprint(w, fs.FlagUsages())
	fmt.Fprintf(w, "\nEvery flag can also be set in the environment (%s)\nor in the config file (YAML, keys are the flag names, plus targets: [url | {url, max_num_seqs}],\nrules: and slo_profiles: (see docs/rules.md)).\nPrecedence: flags, then environment, then config file.\n", envHelp(fs))
}

// isTerminal reports whether w is a terminal: a real isatty (the termios
// ioctl), not "a character device", which /dev/null also is.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
