package detect

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/sources"
	"go.yaml.in/yaml/v3"
)

// Prometheus alerting rules equivalent to the detector's: the same
// conditions over the same signals, with every vLLM name taken from the one
// metric table and aliases joined with `or` so one rule works on every
// release. The detector's hysteresis maps onto keep_firing_for; what PromQL
// cannot say the same way is noted in the rule's description.

const (
	byEngine   = "job, instance, model_name, engine"
	byEndpoint = "job, instance, model_name"
)

type promAlert struct {
	Severity string
	Expr     string
	For      time.Duration // 0: the rule's for
}

// promGen builds PromQL for one rendering.
type promGen struct {
	w      string // range of rate() and friends, e.g. "1m"
	rangeD time.Duration
	slo    diagnose.SLO
}

func (g *promGen) rangeSeconds() float64 { return g.rangeD.Seconds() }

func (g *promGen) num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// dur renders a duration as a PromQL duration.
func (g *promGen) dur(d time.Duration) string { return promDur(d) }

func promDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

// alt joins one expression per alias with `or`: the first name present
// wins for each label set.
func alt(names []string, f func(name string) string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = f(n)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " or ") + ")"
}

// gauge is agg by (by) of a gauge's aliases.
func (g *promGen) gauge(id sources.Gauge, agg, by string) string {
	return alt(sources.FamilyNames(sources.RoleGauge, uint8(id)), func(n string) string {
		return fmt.Sprintf("%s by (%s) (%s)", agg, by, n)
	})
}

// rate is the per-second rate of a counter's aliases.
func (g *promGen) rate(id sources.Counter, by string) string {
	return alt(sources.FamilyNames(sources.RoleCounter, uint8(id)), func(n string) string {
		return fmt.Sprintf("sum by (%s) (rate(%s_total[%s]))", by, n, g.w)
	})
}

// labeledRate is the rate of a labeled counter, one label value or all.
func (g *promGen) labeledRate(id sources.Labeled, value, by string) string {
	return g.labeledRateAt(id, value, by, 0)
}

// labeledRateAt is labeledRate ago in the past (offset).
func (g *promGen) labeledRateAt(id sources.Labeled, value, by string, ago time.Duration) string {
	var label string
	for _, m := range sources.Metrics {
		if m.Role == sources.RoleLabeled && m.ID == uint8(id) {
			label = m.Label
			break
		}
	}
	return alt(sources.FamilyNames(sources.RoleLabeled, uint8(id)), func(n string) string {
		sel := ""
		if value != "" {
			sel = fmt.Sprintf(`{%s=%q}`, label, value)
		}
		off := ""
		if ago > 0 {
			off = " offset " + promDur(ago)
		}
		return fmt.Sprintf("sum by (%s) (rate(%s_total%s[%s]%s))", by, n, sel, g.w, off)
	})
}

// quantile is histogram_quantile over a histogram's aliases.
func (g *promGen) quantile(q float64, h sources.Hist, by string) string {
	inner := alt(sources.FamilyNames(sources.RoleHist, uint8(h)), func(n string) string {
		return fmt.Sprintf("sum by (le, %s) (rate(%s_bucket[%s]))", by, n, g.w)
	})
	return fmt.Sprintf("histogram_quantile(%s, %s)", g.num(q), inner)
}

func (g *promGen) procName(id sources.Proc) string {
	return sources.FamilyName(sources.RoleProc, uint8(id))
}

// cacheInfo selects cache_config_info series matching a label matcher.
func (g *promGen) cacheInfo(matcher string) string {
	return fmt.Sprintf("%s{%s}", sources.FamilyName(sources.RoleCacheInfo, 0), matcher)
}

// servedVLLM is true for targets that exposed vLLM's running gauge within
// the last hour: target rules stay on vLLM targets.
func (g *promGen) servedVLLM() string {
	return alt(sources.FamilyNames(sources.RoleGauge, uint8(sources.GRunning)), func(n string) string {
		return fmt.Sprintf("group by (job, instance) (present_over_time(%s[1h]))", n)
	})
}

// geRegex matches decimal label values ≥ t (two decimals, up to 1):
// cache_config_info carries gpu_memory_utilization as a string.
func geRegex(t float64) string {
	k := int(math.Ceil(t*100 - 1e-9))
	var alts []string
	for ; k < 100; k++ {
		if k%10 == 0 {
			alts = append(alts, fmt.Sprintf(`0\\.%d0*`, k/10))
		} else {
			alts = append(alts, fmt.Sprintf(`0\\.%02d\\d*`, k))
		}
	}
	alts = append(alts, `1(\\.0*)?`)
	return strings.Join(alts, "|")
}

// PromOptions shapes the rendered rules.
type PromOptions struct {
	Range time.Duration // rate()/quantile range (default 1m; Prometheus needs ≥ 4 scrapes in it)
	Group string        // rule group name (default "vtop")
	// Say spells the rules' words with their parameter values (the ui's
	// format.Say): the detector hands words with numbers, never spells one.
	Say func(diagnose.Text) string
}

type promFile struct {
	Groups []promGroup `yaml:"groups"`
}

type promGroup struct {
	Name  string     `yaml:"name"`
	Rules []promRule `yaml:"rules"`
}

type promRule struct {
	Alert         string            `yaml:"alert"`
	Expr          string            `yaml:"expr"`
	For           string            `yaml:"for,omitempty"`
	KeepFiringFor string            `yaml:"keep_firing_for,omitempty"`
	Labels        map[string]string `yaml:"labels"`
	Annotations   map[string]string `yaml:"annotations"`
}

// PrometheusRules renders the active rules as a Prometheus rule file.
// Disabled rules are left out.
func PrometheusRules(rules []ActiveRule, slo diagnose.SLO, o PromOptions) ([]byte, error) {
	if o.Say == nil {
		return nil, errors.New("prometheus rules: no Say to spell the rules' words")
	}
	if o.Range <= 0 {
		o.Range = time.Minute
	}
	if o.Group == "" {
		o.Group = "vtop"
	}
	g := &promGen{w: promDur(o.Range), rangeD: o.Range, slo: slo}
	grp := promGroup{Name: o.Group}
	for i := range rules {
		r := &rules[i]
		if !r.Enabled || r.prom == nil {
			continue
		}
		for _, a := range r.prom(g, r.Values) {
			pr := promRule{
				Alert: alertName(r.ID, a.Severity, len(r.prom(g, r.Values)) > 1),
				Expr:  a.Expr,
				Labels: map[string]string{
					"severity": a.Severity, "vtop_rule": r.ID,
				},
				Annotations: map[string]string{
					"summary":     r.Title + ": " + o.Say(r.Text(r.Cond)),
					"description": r.Catches + " Action: " + o.Say(r.Text(r.Action)) + ".",
				},
			}
			f := r.For
			if a.For > 0 {
				f = a.For
			}
			if f > 0 {
				pr.For = promDur(f)
			}
			if r.ResolveFor > 0 {
				pr.KeepFiringFor = promDur(r.ResolveFor)
			}
			grp.Rules = append(grp.Rules, pr)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Generated by `vtop rules --format prometheus`: the diagnosis rules of vtop as\n")
	fmt.Fprintf(&b, "# Prometheus alerting rules (SLO profile %q, range %s). Check with promtool check rules.\n", slo.Name, g.w)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(promFile{Groups: []promGroup{grp}}); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// alertName is VtopKVCacheThrashing, with a Critical suffix when a rule
// renders one alert per severity.
func alertName(id, sev string, several bool) string {
	var b strings.Builder
	b.WriteString("Vtop")
	for _, w := range strings.Split(id, "_") {
		switch w {
		case "kv", "slo", "gpu", "xid", "oom":
			b.WriteString(strings.ToUpper(w))
		default:
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	if several && sev != "warning" {
		b.WriteString(strings.ToUpper(sev[:1]) + sev[1:])
	}
	return b.String()
}
