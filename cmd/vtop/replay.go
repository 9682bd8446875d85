package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/spf13/pflag"

	"github.com/vtop-dev/vtop/app"
	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/ui"
	"github.com/vtop-dev/vtop/ui/report"
)

func init() { subcommands["replay"] = runReplay }

const replayUsage = `Usage:
  vtop replay [flags] FILE [FILE]        the recording in the TUI: pause, step, seek, speed
  vtop replay --once [--at TIME] [-o json] FILE [FILE]   the report at one moment

FILE is a --record file; a rotated recording is FILE.1 FILE, oldest first.
The detector runs again on the recorded scrapes with this vtop's rules and the
recorded configuration (thresholds, SLO profile), evaluating at the instants
the live run did. TIME is RFC 3339 (2026-11-24T04:12:31Z), a time of day
(04:12:31, UTC, on the recording's first day) or an offset from its start
(+90s, 5m).

Flags:
`

// replayLayered are the replay flags that also come from the environment
// and the config file.
var replayLayered = []string{"output", "theme", "max-samples", "log"}

// runReplay is `vtop replay`.
func runReplay(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := pflag.NewFlagSet("vtop replay", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.Bool("once", false, "print the report at --at (default: the end) and exit with its status")
	fs.String("at", "", "the moment to report (--once) or to start at (TUI)")
	fs.StringP("output", "o", "text", "report format with --once: text, json or markdown")
	fs.Int("speed", 1, "playback speed in the TUI: 1 to 60 times real time")
	fs.String("slo", "", "judge latency by this SLO profile instead of the recorded one")
	fs.String("theme", "dark", "color theme: dark, light, high-contrast, mono")
	fs.Int("max-samples", 0, "most samples accepted from one recorded scrape (default as live)")
	fs.String("log", "", "write diagnostics to this file")
	fs.String("config", "", "config file (default $VTOP_CONFIG, then $XDG_CONFIG_HOME/vtop/config.yaml)")
	fs.BoolP("help", "h", false, "show this help")
	err := fs.Parse(args)
	if h, _ := fs.GetBool("help"); h || errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(stdout, replayUsage+fs.FlagUsages())
		return 0
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "vtop replay: %v\n", err)
		return int(report.Unknown)
	}
	if err != nil {
		return fail(err)
	}
	if fs.NArg() == 0 {
		return fail(errors.New("name the recording: vtop replay FILE"))
	}
	// flags > VTOP_* > config file, as for the main command, for what a
	// replay shares with a live run. The SLO profile is the recording's
	// unless --slo says otherwise: a config's profile judged the live run
	// that was recorded, or did not.
	path, explicit := configPath(fs, getenv)
	fc, err := loadFile(path, explicit)
	if err != nil {
		return fail(err)
	}
	if err := layer(fs, getenv, fc, path, replayLayered...); err != nil {
		return fail(err)
	}
	once, _ := fs.GetBool("once")
	at, _ := fs.GetString("at")
	out, _ := fs.GetString("output")
	speed, _ := fs.GetInt("speed")
	slo, _ := fs.GetString("slo")
	maxSamples, _ := fs.GetInt("max-samples")
	if out != "text" && out != "json" && out != "markdown" {
		return fail(fmt.Errorf("--output must be text, json or markdown, not %q", out))
	}
	if speed < 1 || speed > 60 {
		return fail(fmt.Errorf("--speed must be 1 to 60, not %d", speed))
	}
	look := &options{}
	look.theme, _ = fs.GetString("theme")
	if err := look.resolveLook(fs, getenv); err != nil {
		return fail(err)
	}
	p, err := app.OpenPlayer(fs.Args(), maxSamples, slo)
	if err != nil {
		return fail(err)
	}
	defer p.Close()
	var atT time.Time
	if at != "" {
		if atT, err = parseAt(at, p.Header().Started); err != nil {
			return fail(err)
		}
	}
	if once || !isTerminal(stdout) {
		return replayOnce(p, atT, out, stdout, stderr)
	}
	logPath, _ := fs.GetString("log")
	logger, closeLog, err := openLog(logPath)
	if err != nil {
		return fail(err)
	}
	defer closeLog()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return replayTUI(ctx, p, atT, maxSamples, slo, speed, look.theme, stdout, stderr, logger)
}

// parseMoment reads the main command's --at: as parseAt, from now, and
// "-90m" for a moment that long before now.
func parseMoment(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(strings.TrimPrefix(s, "-")); strings.HasPrefix(s, "-") && err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	t, err := parseAt(s, now)
	if err == nil && t.After(now) {
		return t, fmt.Errorf("--at %s is in the future", t.UTC().Format(time.RFC3339))
	}
	return t, err
}

// parseAt reads --at: RFC 3339, a UTC time of day on the start's day, or
// an offset from the start.
func parseAt(s string, start time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		// The zero time (0001-01-01) means "now" or "the end" inside
		// vtop: a moment before 1970 holds no metrics anyway.
		if t.Before(time.Unix(0, 0)) {
			return time.Time{}, fmt.Errorf("--at %s is before 1970: no metrics are that old", sources.Sanitize(s, 40))
		}
		return t, nil
	}
	if d, err := time.ParseDuration(strings.TrimPrefix(s, "+")); err == nil && d >= 0 {
		return start.Add(d), nil
	}
	for _, layout := range []string{"15:04:05.999999999", "15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			y, m, d := start.UTC().Date()
			return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC), nil
		}
	}
	return time.Time{}, fmt.Errorf("--at %q: use RFC 3339 (2026-11-24T04:12:31Z), a UTC time of day (04:12:31) or an offset (+90s)", s)
}

// replayOnce prints the report of the last evaluation at or before at (the
// end of the recording when at is zero).
func replayOnce(p *app.Player, at time.Time, out string, stdout, stderr io.Writer) int {
	var fr *diagnose.Frame
	if at.IsZero() {
		for p.Next() {
		}
		fr = p.Frame()
	} else {
		fr = p.Until(at)
	}
	if err := p.Stopped(); err != nil {
		fmt.Fprintf(stderr, "vtop replay: %v\n", err)
	}
	if fr == nil {
		if at.IsZero() {
			fmt.Fprintf(stderr, "vtop replay: the recording holds no evaluation\n")
		} else {
			fmt.Fprintf(stderr, "vtop replay: no evaluation at or before %s (the recording starts %s)\n",
				at.UTC().Format(time.RFC3339), p.Header().Started.UTC().Format(time.RFC3339))
		}
		return int(report.Unknown)
	}
	// At the end of a --once recording, the report says how that run went
	// (its elapsed time, an interruption) as the live one did.
	run := report.Run{Window: fr.Window, Elapsed: fr.Window}
	if at.IsZero() && p.RunInfo() != nil {
		if err := json.Unmarshal(p.RunInfo(), &run); err != nil {
			run = report.Run{Window: fr.Window, Elapsed: fr.Window}
		}
	}
	st := report.RunStatus(fr, run)
	var err error
	if out == "markdown" {
		err = report.WriteMarkdown(stdout, fr, st)
	} else if out == "json" {
		err = report.WriteJSON(stdout, report.BuildJSONRun(fr, vtopVersion(), st, run))
	} else {
		err = report.WriteTextRun(stdout, fr, st, run)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vtop replay: %v\n", err)
	}
	return int(st)
}

// replayTUI shows the recording in the TUI until the user quits, through
// the live TUI's runProgram: the same signals, suspend and restore.
func replayTUI(ctx context.Context, pl *app.Player, at time.Time, maxSamples int, slo string, speed int, theme string, stdout, stderr io.Writer, logger *slog.Logger) int {
	prevLog := log.Writer()
	log.SetOutput(slogWriter{logger})
	defer log.SetOutput(prevLog)

	h := app.NewReplayHub(pl.Files(), maxSamples, slo, speed)
	m := ui.New(h, ui.Options{Theme: theme, SLO: pl.Rules().SLO.Name, SLOs: pl.Rules().Profiles, Window: time.Duration(pl.Header().Window),
		Renderer: lipgloss.NewRenderer(stdout), Tick: -1, Copy: osc52(stdout)})
	if code := runProgram(ctx, m, stdout, stderr, logger, false, "vtop replay", func(ctx context.Context) {
		h.Run(ctx, pl, at)
	}); code != 0 {
		return code
	}
	if st := h.ReplayState(); st.Note != "" {
		fmt.Fprintf(stderr, "vtop replay: %s\n", st.Note)
	}
	return int(report.OK)
}
