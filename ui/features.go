package ui

import (
	"math"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/vtop-dev/vtop/diagnose"
	f "github.com/vtop-dev/vtop/ui/format"
)

// featuresPanel is what an engine exposes beyond the four rows, a line for
// each only when the server exposes it: speculative decoding, LoRA
// adapters, KV transfer and offload (P/D), sleep (while asleep). A server
// without any of them gets no panel and no blank lines.
type featuresPanel struct {
	c    *common
	w, h int
	e    *diagnose.EndpointView
	sj   subject
}

var _ component = (*featuresPanel)(nil)

func (p *featuresPanel) SetSize(sz size) { p.w, p.h = sz.w, sz.h }

// show sets the endpoint the panel describes (nil: the fleet, which has none).
func (p *featuresPanel) show(e *diagnose.EndpointView, sj subject) { p.e, p.sj = e, sj }

// Update: the panel takes no keys.
func (p *featuresPanel) Update(tea.KeyMsg) action { return action{} }

// ShortHelp: no footer hints.
func (p *featuresPanel) ShortHelp() []hint { return nil }

// View renders the lines that fit.
func (p *featuresPanel) View() []string {
	if p.e == nil || p.h <= 0 {
		return nil
	}
	s := p.c.st
	var out []string
	for _, l := range featureLines(p.e) {
		out = append(out, s.cellsLine(l.label, l.cells, p.sj.hist, p.w))
	}
	return block(out, p.w, min(p.h, len(out)))
}

// featureLine is one feature: its label and cells.
type featureLine struct {
	label string
	cells []cell
}

// featureLines are the lines e's server exposes (none for the fleet).
func featureLines(e *diagnose.EndpointView) []featureLine {
	if e == nil || e.LastSuccess.IsZero() {
		return nil
	}
	st := &e.Stats
	var out []featureLine
	if !math.IsNaN(st.SpecAcceptRate) || !math.IsNaN(st.SpecAcceptLen) {
		var pos []string
		for _, v := range st.SpecPosAccept {
			pos = append(pos, f.Percent(v))
		}
		by := strings.Join(pos, " ")
		if by == "" {
			by = f.Missing
		}
		acc := statCell(st, diagnose.StatSpecAccept)
		acc.spark = &sparkSpec{diagnose.SpSpecAccept, ratioScale, lvNone}
		out = append(out, featureLine{"Spec", []cell{acc, statCell(st, diagnose.StatSpecAcceptLen), statCell(st, diagnose.StatSpecDraftsPerStep)}},
			featureLine{"", []cell{{label: "by position", value: by}}})
	}
	if l := e.Lora; l != nil && (l.MaxLora > 0 || len(l.Running) > 0 || len(l.Waiting) > 0) {
		names := func(a []string) string {
			if len(a) == 0 {
				return "none"
			}
			return strings.Join(a, ",")
		}
		wlv := lvNone
		if len(l.Waiting) > 0 {
			wlv = lvWarn
		}
		out = append(out, featureLine{"LoRA", []cell{
			{label: "adapters running", value: itoa(len(l.Running)), tail: "of max_lora " + itoa(l.MaxLora)},
			{label: "waiting", value: itoa(len(l.Waiting)), lv: wlv},
		}}, featureLine{"", []cell{{label: "running", value: names(l.Running), tail: "· waiting " + names(l.Waiting)}}})
	}
	// SGLang registers its transfer-failure counter in every mode: alone
	// and at zero it says nothing about a server without P/D.
	if !math.IsNaN(st.KVExpiredRate) || !math.IsNaN(st.KVOffloadRate) || st.KVXferFailRate > 0 {
		flv := lvNone
		if st.KVXferFailRate > 0 {
			flv = lvWarn
		}
		failed := statCell(st, diagnose.StatKVXferFail)
		failed.lv, failed.spark = flv, &sparkSpec{diagnose.SpKVXferFail, autoScale, flv}
		out = append(out, featureLine{"KV xfer", []cell{failed, statCell(st, diagnose.StatKVExpired), statCell(st, diagnose.StatKVOffload)}})
	}
	// Sleep: a line only while asleep (awake is every serving engine's
	// state; the JSON report says it either way).
	if st.Sleep == diagnose.SleepAsleep {
		c := cell{value: st.Sleep.String(), lv: lvWarn}
		if st.SleepLevel != "" {
			c.tail = "(" + st.SleepLevel + ")"
		}
		out = append(out, featureLine{"Sleep", []cell{c}})
	}
	return out
}
