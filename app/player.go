package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/diagnose/detect"
	"github.com/vtop-dev/vtop/record"
	"github.com/vtop-dev/vtop/sources"
)

// Player runs a recording through a fresh pipeline: the recording is a
// source (record.Source) whose batches hold what the live run ingested
// between two evaluations, applied by the same pipeline code, and the
// detector evaluates once per batch, at the live run's instants. The
// rules are this vtop's, configured as the recording says (or as
// overridden), so a new rule or a fixed threshold applies to old data.
type Player struct {
	files      []string
	maxSamples int
	slo        string // --slo override; "" keeps the recorded profile

	hdr    record.Header
	rules  detect.RulesConfig
	p      *Pipeline
	src    *record.Source
	in     chan sources.Batch
	cancel context.CancelFunc
	done   chan error

	frame *diagnose.Frame // the newest evaluated frame
	ticks int
	run   []byte // a --once recording's run record, read at the end
	stop  error  // the damage where reading stopped; nil at a clean end
	ended bool
}

// OpenPlayer opens a recording (files oldest first) at its start; slo
// overrides the recorded SLO profile.
func OpenPlayer(files []string, maxSamples int, slo string) (*Player, error) {
	pl := &Player{files: files, maxSamples: maxSamples, slo: slo}
	if err := pl.rewind(); err != nil {
		return nil, err
	}
	return pl, nil
}

// replayOptions rebuilds a run's options from a recording's header.
func replayOptions(hdr record.Header, file, slo string) (*Config, time.Duration, error) {
	var cfg recordedConfig
	if len(hdr.Config) > 0 {
		if err := json.Unmarshal(hdr.Config, &cfg); err != nil {
			return nil, 0, fmt.Errorf("%s: recorded configuration: %v", file, err)
		}
		// A recording is untrusted: its profile names reach findings.
		sources.SanitizeAll(&cfg, sources.MaxLabelLen)
	}
	rules := detect.RulesConfig{SLO: cfg.SLO, Rules: cfg.Rules, Profiles: cfg.Profiles}
	if len(rules.Profiles) == 0 {
		rules.Profiles = diagnose.SLOProfiles()
	}
	if rules.SLO.Name == "" {
		rules.SLO = rules.Profiles[0]
	}
	if slo != "" {
		s, err := diagnose.FindSLO(rules.Profiles, slo)
		if err != nil {
			return nil, 0, fmt.Errorf("--slo: %v", err)
		}
		rules.SLO = s
	}
	o := &Config{Interval: time.Duration(hdr.Interval), Window: time.Duration(hdr.Window), Rules: rules}
	for _, t := range hdr.Targets {
		o.Targets = append(o.Targets, t.Source())
	}
	return o, cfg.ForCap, nil
}

// rewind starts over from the first frame with fresh state.
func (pl *Player) rewind() error {
	pl.Close()
	r, err := record.Open(pl.files[0])
	if err != nil {
		return err
	}
	hdr := r.Header()
	r.Close()
	o, forCap, err := replayOptions(hdr, pl.files[0], pl.slo)
	if err != nil {
		return err
	}
	p, err := NewOf(o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return fmt.Errorf("%s: recorded rules: %v", pl.files[0], err)
	}
	if forCap > 0 {
		p.detector.SetForCap(forCap)
	}
	ctx, cancel := context.WithCancel(context.Background())
	*pl = Player{files: pl.files, maxSamples: pl.maxSamples, slo: pl.slo, hdr: hdr, rules: o.Rules, p: p,
		src: record.NewSource(pl.files, pl.maxSamples), in: make(chan sources.Batch), cancel: cancel, done: make(chan error, 1)}
	go func(src *record.Source, in chan sources.Batch) {
		err := src.Run(ctx, in)
		close(in)
		pl.done <- err
	}(pl.src, pl.in)
	return nil
}

// Next applies the next batch and evaluates at its time. It returns false
// at the end of the recording (pl.stop says whether it ended damaged).
func (pl *Player) Next() bool {
	if pl.ended {
		return false
	}
	b, ok := <-pl.in
	if !ok {
		pl.ended = true
		if err := <-pl.done; err != nil {
			pl.stop = err
		} else {
			pl.stop = pl.src.Stopped()
		}
		pl.run = pl.src.RunInfo()
		return false
	}
	pl.p.Apply(&b)
	pl.frame = pl.p.frame()
	pl.ticks++
	return true
}

// Until evaluates every batch up to at (inclusive) and returns the last
// frame evaluated at or before at, nil when none was. The player stays on
// the first frame past at.
func (pl *Player) Until(at time.Time) *diagnose.Frame {
	var last *diagnose.Frame
	if pl.frame != nil && !pl.frame.Time.After(at) {
		last = pl.frame
	}
	for !(pl.frame != nil && pl.frame.Time.After(at)) && pl.Next() {
		if !pl.frame.Time.After(at) {
			last = pl.frame
		}
	}
	return last
}

// Close stops reading the recording.
func (pl *Player) Close() {
	if pl.cancel != nil {
		pl.cancel()
		if !pl.ended {
			for range pl.in { // the source sees ctx end and returns
			}
			<-pl.done
		}
		pl.cancel = nil
	}
}

// Frame is the newest evaluated frame; nil before the first Next.
func (pl *Player) Frame() *diagnose.Frame { return pl.frame }

// Header is the recording's header.
func (pl *Player) Header() record.Header { return pl.hdr }

// Stopped is the damage where reading stopped; nil at a clean end or
// before the end.
func (pl *Player) Stopped() error { return pl.stop }

// RunInfo is a --once recording's run record, once the end was read.
func (pl *Player) RunInfo() []byte { return pl.run }

// Files are the recording's files, oldest first.
func (pl *Player) Files() []string { return pl.files }

// Rules are the rules' configuration the replay evaluates with.
func (pl *Player) Rules() detect.RulesConfig { return pl.rules }

// Evaluations counts the evaluations played so far.
func (pl *Player) Evaluations() int { return pl.ticks }

// reevaluate evaluates again at the newest evaluation's time (after a
// setting changed) and returns the frame.
func (pl *Player) reevaluate() *diagnose.Frame {
	pl.frame = pl.p.frame()
	return pl.frame
}
