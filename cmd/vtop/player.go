package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources/record"
)

// player runs a recording through a fresh engine and detector: scrapes,
// GPU readings and process trees are ingested in recorded order and the
// detector evaluates at every recorded tick, as the live run did. The
// rules are this vtop's, configured as the recording says (or as
// overridden), so a new rule or a fixed threshold applies to old data.
type player struct {
	files      []string
	maxSamples int
	slo        string // --slo override; "" keeps the recorded profile

	rp     *record.Replay
	hdr    record.Header
	engine *diagnose.Engine
	det    *diagnose.Detector
	rules  diagnose.RulesConfig
	frame  *diagnose.Frame // the newest evaluated frame
	ticks  int
	stop   error // the damage where reading stopped; nil at a clean end
	ended  bool
}

func openPlayer(files []string, maxSamples int, slo string) (*player, error) {
	p := &player{files: files, maxSamples: maxSamples, slo: slo}
	if err := p.rewind(); err != nil {
		return nil, err
	}
	return p, nil
}

// rewind starts over from the first frame with fresh state.
func (p *player) rewind() error {
	if p.rp != nil {
		p.rp.Close()
	}
	rp, err := record.OpenReplay(p.files, p.maxSamples)
	if err != nil {
		return err
	}
	hdr := rp.Header()
	var cfg recordedConfig
	if len(hdr.Config) > 0 {
		if err := json.Unmarshal(hdr.Config, &cfg); err != nil {
			rp.Close()
			return fmt.Errorf("%s: recorded configuration: %v", p.files[0], err)
		}
	}
	rules := diagnose.RulesConfig{SLO: cfg.SLO, Rules: cfg.Rules, Profiles: cfg.Profiles}
	if len(rules.Profiles) == 0 {
		rules.Profiles = diagnose.SLOProfiles()
	}
	if rules.SLO.Name == "" {
		rules.SLO = rules.Profiles[0]
	}
	if p.slo != "" {
		found := false
		for _, s := range rules.Profiles {
			if s.Name == p.slo {
				rules.SLO, found = s, true
			}
		}
		if !found {
			rp.Close()
			return fmt.Errorf("--slo %q: no such profile in the recording or built in", p.slo)
		}
	}
	det, err := diagnose.NewDetector(rules)
	if err != nil {
		rp.Close()
		return fmt.Errorf("%s: recorded rules: %v", p.files[0], err)
	}
	if cfg.ForCap > 0 {
		det.SetForCap(cfg.ForCap)
	}
	infos := make([]diagnose.TargetInfo, len(hdr.Targets))
	for i, t := range hdr.Targets {
		infos[i] = diagnose.TargetInfo{Name: t.Name, MaxNumSeqs: t.MaxNumSeqs}
	}
	*p = player{files: p.files, maxSamples: p.maxSamples, slo: p.slo, rp: rp, hdr: hdr, det: det, rules: rules,
		engine: diagnose.New(diagnose.Config{Window: time.Duration(hdr.Window), Interval: time.Duration(hdr.Interval)}, infos)}
	return nil
}

// next ingests up to the next tick and evaluates there. It returns false
// at the end of the recording (p.stop says whether it ended damaged).
func (p *player) next() bool {
	if p.ended {
		return false
	}
	for {
		it, err := p.rp.Next()
		if err != nil {
			p.ended = true
			if !errors.Is(err, io.EOF) {
				p.stop = err
			}
			return false
		}
		switch it.Kind {
		case record.KindScrape:
			p.engine.Ingest(it.Index, it.Scrape)
		case record.KindGPU:
			p.engine.IngestGPU(it.GPU)
		case record.KindProcs:
			p.engine.SetEndpointProcs(it.Index, it.Procs)
		case record.KindTick:
			p.frame = p.engine.Frame(it.Time)
			p.det.Evaluate(p.frame)
			p.ticks++
			return true
		}
	}
}

// until evaluates every tick up to at (inclusive) and returns the last
// frame evaluated, nil when none was before at.
func (p *player) until(at time.Time) *diagnose.Frame {
	var last *diagnose.Frame
	if p.frame != nil && !p.frame.Time.After(at) {
		last = p.frame
	}
	for {
		if p.peekAfter(at) {
			return last
		}
		if !p.next() {
			return last
		}
		if p.frame.Time.After(at) {
			return last
		}
		last = p.frame
	}
}

// peekAfter reports whether the current frame is already past at.
func (p *player) peekAfter(at time.Time) bool { return p.frame != nil && p.frame.Time.After(at) }

func (p *player) close() {
	if p.rp != nil {
		p.rp.Close()
	}
}
