package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/diagnose/detect"
	"github.com/vtop-dev/vtop/record"
)

// recordedConfig is the configuration that decides findings, kept in a
// recording's header so a replay evaluates with the same rules.
type recordedConfig struct {
	SLO      diagnose.SLO                 `json:"slo"`
	Rules    map[string]detect.RuleConfig `json:"rules,omitempty"`
	Profiles []diagnose.SLO               `json:"slo_profiles,omitempty"`
	ForCap   time.Duration                `json:"for_cap,omitempty"` // --once caps for durations at half its window
}

// startRecording opens --record when asked. forCap is the cap a --once run
// puts on for durations (0 for the TUI).
func (p *pipeline) startRecording(o *options, forCap time.Duration) error {
	if o.record == "" {
		return nil
	}
	cfg, err := json.Marshal(recordedConfig{SLO: o.rules.SLO, Rules: o.rules.Rules, Profiles: o.rules.Profiles, ForCap: forCap})
	if err != nil {
		return err
	}
	hdr := record.Header{VtopVersion: vtopVersion(), Started: time.Now().UTC(), Interval: record.Duration(o.interval),
		Window: record.Duration(o.window), Config: cfg}
	if o.prom.url != "" {
		// The replicas arrive as the server names them; their scrapes are
		// the expositions rebuilt from its series (promapi.Config.KeepBody).
		// The extra headers are never written: a tenant ID is a credential.
		hdr.Prometheus = &record.Prometheus{URL: record.Redact(o.prom.url), Selector: o.prom.selector,
			Backfill: record.Duration(o.prom.backfill), At: o.prom.at.UTC()}
	}
	w, err := record.Create(o.record, hdr, o.targets, o.recordMax)
	if err != nil {
		return err
	}
	p.rec = w
	return nil
}

// stopRecording closes the recording and says on stderr if it failed (after
// the TUI is gone, so the terminal shows it).
func (p *pipeline) stopRecording(stderr io.Writer) {
	if p.rec == nil {
		return
	}
	if err := p.rec.Close(); err != nil {
		fmt.Fprintf(stderr, "vtop: --record %s: %v (the recording stops at the error)\n", p.rec.Path(), err)
	}
}
