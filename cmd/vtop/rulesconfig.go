package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/diagnose/detect"
)

// The config file's rule sections:
//
//	slo_profiles:            # override a built-in profile or add one
//	  chat: {ttft: 400ms}
//	  voice: {desc: voice assistant, ttft: 300ms, itl: 40ms, e2e: 5s}
//	rules:
//	  kv_cache_thrashing: {for: 3m, resolve_for: 1m, kv_high: 0.92}
//	  memory_leak: {disabled: true}

// parseRules reads the rules: section. Every rule id and setting is checked
// here, so a typo is an error with its line, not a silently ignored key.
func parseRules(n *yaml.Node) (map[string]detect.RuleConfig, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: rules must map rule ids to settings", n.Line)
	}
	out := map[string]detect.RuleConfig{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		r, err := detect.LookupRule(k.Value)
		if err != nil {
			return nil, fmt.Errorf("line %d: rules: %v", k.Line, err)
		}
		if v.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("line %d: rules: %s must map settings to values (for, resolve_for, disabled%s)", v.Line, r.ID, paramList(r))
		}
		rc := detect.RuleConfig{Params: map[string]float64{}}
		for j := 0; j+1 < len(v.Content); j += 2 {
			sk, sv := v.Content[j], v.Content[j+1]
			where := fmt.Sprintf("line %d: rules: %s: %s", sk.Line, r.ID, sk.Value)
			if sv.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s must be a single value", where)
			}
			switch sk.Value {
			case "disabled":
				b, err := strconv.ParseBool(sv.Value)
				if err != nil {
					return nil, fmt.Errorf("%s must be true or false", where)
				}
				rc.Disabled = b
			case "for", "resolve_for":
				d, err := parseDur(sv.Value)
				if err != nil {
					return nil, fmt.Errorf("%s: %v", where, err)
				}
				if d == 0 {
					d = -1 // explicitly zero
				}
				if sk.Value == "for" {
					rc.For = d
				} else {
					rc.Resolve = d
				}
			default:
				p, ok := findParam(r, sk.Value)
				if !ok {
					return nil, fmt.Errorf("%s: unknown setting (have for, resolve_for, disabled%s)", where, paramList(r))
				}
				// Time thresholds take a duration (30s) or seconds.
				if p.Unit == "s" {
					if d, err := time.ParseDuration(sv.Value); err == nil && d >= 0 {
						rc.Params[sk.Value] = d.Seconds()
						continue
					}
				}
				f, err := strconv.ParseFloat(sv.Value, 64)
				if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
					if p.Unit == "s" {
						return nil, fmt.Errorf("%s must be a duration like 30s (or seconds)", where)
					}
					return nil, fmt.Errorf("%s must be a non-negative number", where)
				}
				rc.Params[sk.Value] = f
			}
		}
		out[r.ID] = rc
	}
	return out, nil
}

func findParam(r *detect.Rule, name string) (detect.Param, bool) {
	for _, p := range r.Params {
		if p.Name == name {
			return p, true
		}
	}
	return detect.Param{}, false
}

func paramList(r *detect.Rule) string {
	var b strings.Builder
	for _, p := range r.Params {
		b.WriteString(", " + p.Name)
	}
	return b.String()
}

func parseDur(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("must be a duration like 90s or 5m")
	}
	return d, nil
}

// parseSLOProfiles reads slo_profiles: name → {desc, ttft, itl, e2e}.
func parseSLOProfiles(n *yaml.Node) ([]diagnose.SLO, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: slo_profiles must map profile names to targets", n.Line)
	}
	var out []diagnose.SLO
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("line %d: slo_profiles: %s must map ttft, itl, e2e (and desc) to values", v.Line, k.Value)
		}
		p := diagnose.SLO{Name: k.Value}
		for j := 0; j+1 < len(v.Content); j += 2 {
			sk, sv := v.Content[j], v.Content[j+1]
			where := fmt.Sprintf("line %d: slo_profiles: %s: %s", sk.Line, k.Value, sk.Value)
			if sv.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s must be a single value", where)
			}
			if sk.Value == "desc" {
				p.Desc = sv.Value
				continue
			}
			d, err := time.ParseDuration(sv.Value)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("%s must be a positive duration like 500ms", where)
			}
			switch sk.Value {
			case "ttft":
				p.TTFT = d
			case "itl":
				p.ITL = d
			case "e2e":
				p.E2E = d
			default:
				return nil, fmt.Errorf("%s: unknown setting (have desc, ttft, itl, e2e)", where)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// sloProfiles merges the config file's profiles over the built-in ones: a
// known name changes only the targets it gives; a new name needs all three.
func sloProfiles(custom []diagnose.SLO) ([]diagnose.SLO, error) {
	profiles := diagnose.SLOProfiles()
	sort.Slice(custom, func(i, j int) bool { return custom[i].Name < custom[j].Name })
	for _, c := range custom {
		i := -1
		for k := range profiles {
			if strings.EqualFold(profiles[k].Name, c.Name) {
				i = k
			}
		}
		if i < 0 {
			if c.TTFT == 0 || c.ITL == 0 || c.E2E == 0 {
				return nil, fmt.Errorf("slo_profiles: %s is a new profile: give ttft, itl and e2e", c.Name)
			}
			if c.Desc == "" {
				c.Desc = c.Name
			}
			profiles = append(profiles, c)
			continue
		}
		p := &profiles[i]
		if c.Desc != "" {
			p.Desc = c.Desc
		}
		if c.TTFT > 0 {
			p.TTFT = c.TTFT
		}
		if c.ITL > 0 {
			p.ITL = c.ITL
		}
		if c.E2E > 0 {
			p.E2E = c.E2E
		}
	}
	return profiles, nil
}

// rulesConfig builds the detector's configuration from the config file and
// the selected --slo profile, and checks it.
func rulesConfig(fc *fileConfig, slo string) (detect.RulesConfig, error) {
	profiles, err := sloProfiles(fc.SLOProfiles)
	if err != nil {
		return detect.RulesConfig{}, err
	}
	p, err := diagnose.FindSLO(profiles, slo)
	if err != nil {
		return detect.RulesConfig{}, fmt.Errorf("--slo: %v", err)
	}
	rc := detect.RulesConfig{Rules: fc.Rules, SLO: p, Profiles: profiles}
	if _, err := rc.Active(); err != nil {
		return detect.RulesConfig{}, err
	}
	return rc, nil
}
