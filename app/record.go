package app

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

// StartRecording opens c.Record when asked (the c the pipeline was built
// with). forCap is the cap a --once run puts on for durations (0 for the
// TUI).
func (p *Pipeline) StartRecording(c *Config, forCap time.Duration) error {
	if c.Record == "" {
		return nil
	}
	cfg, err := json.Marshal(recordedConfig{SLO: c.Rules.SLO, Rules: c.Rules.Rules, Profiles: c.Rules.Profiles, ForCap: forCap})
	if err != nil {
		return err
	}
	hdr := record.Header{VtopVersion: c.Version, Started: time.Now().UTC(), Interval: record.Duration(c.Interval),
		Window: record.Duration(c.Window), Config: cfg}
	if c.Prom.URL != "" {
		// The replicas arrive as the server names them; their scrapes are
		// the expositions rebuilt from its series (promapi.Config.KeepBody).
		// The extra headers are never written: a tenant ID is a credential.
		hdr.Prometheus = &record.Prometheus{URL: record.Redact(c.Prom.URL), Selector: c.Prom.Selector,
			Backfill: record.Duration(c.Prom.Backfill), At: c.Prom.At.UTC()}
	}
	w, err := record.Create(c.Record, hdr, c.Targets, c.RecordMax)
	if err != nil {
		return err
	}
	p.rec = w
	return nil
}

// StopRecording closes the recording and says on stderr if it failed (after
// the TUI is gone, so the terminal shows it).
func (p *Pipeline) StopRecording(stderr io.Writer) {
	if p.rec == nil {
		return
	}
	if err := p.rec.Close(); err != nil {
		fmt.Fprintf(stderr, "vtop: --record %s: %v (the recording stops at the error)\n", p.rec.Path(), err)
	}
}

// CloseRecording closes the recording, when recording, and says whether
// it was written whole.
func (p *Pipeline) CloseRecording() error {
	if p.rec == nil {
		return nil
	}
	return p.rec.Close()
}
