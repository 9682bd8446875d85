package detect

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/diagnose"
)

// Scope says what one evaluation of a rule looks at.
type Scope uint8

const (
	// ScopeEngine rules run once per (model, data-parallel engine) of an
	// endpoint: the KV cache and the scheduler are per engine.
	ScopeEngine Scope = iota
	// ScopeEndpoint rules run once per endpoint over its merged stats.
	ScopeEndpoint
	// ScopeTarget rules watch the scrape target itself; they also run when
	// the endpoint is down.
	ScopeTarget
	// ScopeFleet rules compare endpoints serving the same model.
	ScopeFleet
	// ScopeGPU rules run once per local GPU (NVML or simulated).
	ScopeGPU
)

func (s Scope) String() string {
	return [...]string{"engine", "endpoint", "target", "fleet", "gpu"}[s]
}

// Param is one tunable threshold of a rule.
type Param struct {
	Name    string  // config key, e.g. "kv_high"
	Default float64 // in Unit
	Unit    string  // "ratio", "per_s", "s", "count", "MiB/min", "factor"
	Help    string
}

// params is a rule's parameter table. A check reads a value through an
// index looked up by the parameter's name (its config key) once, at
// package initialisation, so the code and the config cannot pair by
// position.
type params []Param

// paramUses records every lookup, for the test that pairs each parameter
// with the code that reads it.
var paramUses = map[*Param]int{}

// index is the position of the named parameter; a name the table lacks is
// a programming error caught when the package loads.
func (ps params) index(name string) int {
	for i := range ps {
		if ps[i].Name == name {
			paramUses[&ps[i]]++
			return i
		}
	}
	panic("diagnose: no parameter " + name)
}

// Rule is one pathology the detector recognises. Its documentation (what
// `vtop rules` prints and docs/rules.md lists) is part of the definition, so
// it cannot drift from the code. Condition and Resolve may name parameters
// in braces ({kv_high}); they are shown with the active values.
type Rule struct {
	ID         string
	Title      string
	Scope      Scope
	Catches    string
	Needs      string // the signals it reads, by version
	Cond       string
	Clear      string
	Severity   string
	Action     string
	For        time.Duration // the condition must hold this long before the rule fires
	ResolveFor time.Duration // a firing finding resolves after its clear condition held this long
	// QuietFor hides the pending finding until its condition has held
	// this long (its hold still counts from the first evaluation): for a
	// condition that a transient shows before the evidence that tells
	// them apart arrives.
	QuietFor time.Duration
	Params   []Param
	// NoPromQL, when set, says why the rule has no Prometheus form.
	NoPromQL string

	// check decides from the frame; it must be cheap and allocation-free
	// on the healthy path. describe fills in the finding's words and numbers
	// and only runs for a firing finding.
	// memory, set for a rule that remembers across frames, makes its
	// per-endpoint state (see ruleMemory); check and describe find it in
	// unit.mem.
	memory     func() ruleMemory
	check      func(x *evalCtx, u *unit, p []float64) (cond, diagnose.Severity)
	fleetCheck func(x *evalCtx, f *diagnose.Frame, p []float64) []fleetHit
	describe   func(x *evalCtx, u *unit, p []float64, sev diagnose.Severity, fd *diagnose.Finding)
	prom       func(g *promGen, p []float64) []promAlert
}

// ruleTable is every rule, in the order `vtop rules` and docs/rules.md list
// them.
var ruleTable = []*Rule{
	ruleKVThrashing,
	rulePrefillStarvation,
	ruleBindingLimit,
	ruleSwapping,
	rulePreemption,
	ruleKVSaturated,
	ruleEngineStalled,
	ruleEngineResting,
	ruleRequestErrors,
	ruleAdmissionRejections,
	ruleHTTPRejections,
	ruleMemoryLeak,
	ruleUnderutil,
	rulePrefixMiss,
	ruleQueueBacklog,
	ruleDecodeStutter,
	ruleAbortRate,
	ruleOOMRisk,
	ruleSLOBreach,
	ruleUnexplained,
	ruleImbalance,
	ruleGPUThrottling,
	ruleGPUXID,
	ruleWorkloadShift,
	ruleRunawayAnswers,
	ruleCapacityShift,
	ruleCrashLoop,
	ruleEndpointDown,
	ruleRestarted,
	ruleScrapeSlow,
}

// cond is one evaluation's verdict. Missing data is never a reason to fire.
type cond uint8

const (
	condUnknown cond = iota // the data is not there: never fires, counts toward resolving
	condClear               // the clear condition holds
	condHold                // between the fire and clear thresholds: a firing finding stays
	condMet                 // the firing condition holds
)

// RuleConfig overrides one rule's defaults. Zero values keep the default.
type RuleConfig struct {
	Disabled bool
	For      time.Duration // <0: explicitly zero
	Resolve  time.Duration // <0: explicitly zero
	Params   map[string]float64
}

// RulesConfig is the detector's configuration.
type RulesConfig struct {
	Rules map[string]RuleConfig // by rule id
	SLO   diagnose.SLO          // the profile slo_breach and the latency rules measure against
	// Profiles are every SLO profile known (built-ins with the config
	// file's overrides), for views that let the user switch.
	Profiles []diagnose.SLO
	// ForCap, when positive, caps every rule's for duration: a run shorter
	// than a rule's for (vtop --once) still reports a condition that held
	// for most of it.
	ForCap time.Duration
}

// ActiveRule is a rule with its configuration applied.
type ActiveRule struct {
	*Rule
	Enabled    bool
	For        time.Duration
	ResolveFor time.Duration
	Values     []float64 // one per Params, in order
}

// Value returns the active value of the named parameter, NaN when the rule
// has none by that name.
func (a *ActiveRule) Value(name string) float64 {
	for i, p := range a.Params {
		if p.Name == name {
			return a.Values[i]
		}
	}
	return math.NaN()
}

// LookupRule finds a rule by id.
func LookupRule(id string) (*Rule, error) {
	for _, r := range ruleTable {
		if r.ID == id {
			return r, nil
		}
	}
	return nil, fmt.Errorf("unknown rule %q (have %s)", id, strings.Join(RuleIDs(), ", "))
}

// RuleIDs lists every rule id.
func RuleIDs() []string {
	out := make([]string, len(ruleTable))
	for i, r := range ruleTable {
		out[i] = r.ID
	}
	return out
}

// Active applies cfg to the rule table. It reports unknown rules and
// parameters, and values that cannot be right (negative thresholds).
func (cfg RulesConfig) Active() ([]ActiveRule, error) {
	for id, rc := range cfg.Rules {
		r, err := LookupRule(id)
		if err != nil {
			return nil, err
		}
		for name, v := range rc.Params {
			found := false
			for _, p := range r.Params {
				if p.Name == name {
					found = true
				}
			}
			if !found {
				var names []string
				for _, p := range r.Params {
					names = append(names, p.Name)
				}
				return nil, fmt.Errorf("rule %s: unknown setting %q (have for, resolve_for, disabled%s)", id, name, prefixJoin(", ", names))
			}
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("rule %s: %s must be a non-negative number", id, name)
			}
		}
	}
	out := make([]ActiveRule, len(ruleTable))
	for i, r := range ruleTable {
		a := ActiveRule{Rule: r, Enabled: true, For: r.For, ResolveFor: r.ResolveFor, Values: make([]float64, len(r.Params))}
		for j, p := range r.Params {
			a.Values[j] = p.Default
		}
		if rc, ok := cfg.Rules[r.ID]; ok {
			a.Enabled = !rc.Disabled
			switch {
			case rc.For < 0:
				a.For = 0
			case rc.For > 0:
				a.For = rc.For
			}
			switch {
			case rc.Resolve < 0:
				a.ResolveFor = 0
			case rc.Resolve > 0:
				a.ResolveFor = rc.Resolve
			}
			for j, p := range r.Params {
				if v, ok := rc.Params[p.Name]; ok {
					a.Values[j] = v
				}
			}
		}
		out[i] = a
	}
	return out, nil
}

func prefixJoin(sep string, s []string) string {
	if len(s) == 0 {
		return ""
	}
	return sep + strings.Join(s, sep)
}

// Text is Cond, Resolve or Action with the active parameter values.
func (a *ActiveRule) Text(s string) diagnose.Text {
	if !strings.Contains(s, "{") {
		return diagnose.Plain(s)
	}
	var t diagnose.Text
	for {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			return t.Cat(diagnose.Plain(s))
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return t.Cat(diagnose.Plain(s))
		}
		t = t.Cat(diagnose.Plain(s[:i]))
		name := s[i+1 : i+j]
		if v := a.Value(name); !math.IsNaN(v) {
			t = t.Add("%s", FormatParam(a.param(name), v))
		} else {
			t = t.Cat(diagnose.Plain(s[i : i+j+1]))
		}
		s = s[i+j+1:]
	}
}

func (a *ActiveRule) param(name string) Param {
	for _, p := range a.Params {
		if p.Name == name {
			return p
		}
	}
	return Param{}
}

// FormatParam is a parameter value in its unit, the way the docs and
// `vtop rules` show it (ratios as percentages), as it is written in the
// config file; a span of time is spelled as findings spell one.
func FormatParam(p Param, v float64) diagnose.Value {
	switch p.Unit {
	case "ratio":
		return diagnose.Str(trimFloat(v*100, 1) + "%")
	case "s":
		return dur(seconds(v))
	case "per_s":
		return diagnose.Str(trimFloat(v, 2) + "/s")
	case "factor":
		return diagnose.Str(trimFloat(v, 2) + "×")
	case "MiB/min":
		return diagnose.Str(trimFloat(v, 1) + " MiB/min")
	}
	return diagnose.Str(trimFloat(v, 2))
}

func trimFloat(v float64, prec int) string {
	return strconv.FormatFloat(math.Round(v*math.Pow10(prec))/math.Pow10(prec), 'f', -1, 64)
}

// SortFindings orders findings worst first: severity, then the oldest
// first-seen, then target and rule for a stable order. It sorts small keys
// and moves each finding once: sort.SliceStable swapped the whole structs
// through reflection, O(n log² n) times, and asked the cause graph of each
// comparison (8 % of vtop's CPU with 400 findings; BENCHMARKS.md, issue 23).
func SortFindings(fs []diagnose.Finding) {
	if len(fs) < 2 {
		return
	}
	type key struct {
		i   int
		sev diagnose.Severity
		sym bool
	}
	keys := make([]key, len(fs))
	for i := range fs {
		keys[i] = key{i, fs[i].Severity, isSymptom(&fs[i])}
	}
	slices.SortStableFunc(keys, func(x, y key) int {
		if x.sev != y.sev {
			return cmp.Compare(y.sev, x.sev)
		}
		// At one severity a cause comes before the symptoms it explains.
		if x.sym != y.sym {
			if x.sym {
				return 1
			}
			return -1
		}
		a, b := &fs[x.i], &fs[y.i]
		if c := a.FirstSeen.Compare(b.FirstSeen); c != 0 {
			return c
		}
		if c := cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Rule, b.Rule),
			cmp.Compare(a.Model, b.Model), cmp.Compare(a.Engine, b.Engine)); c != 0 {
			return c
		}
		// The state table is a map: the order must not depend on it.
		return cmp.Compare(a.ID(), b.ID())
	})
	// Place each finding by following the permutation's cycles: one
	// finding aside, no second list.
	for k := range keys {
		if keys[k].i < 0 || keys[k].i == k {
			continue
		}
		tmp := fs[k]
		j := k
		for {
			src := keys[j].i
			keys[j].i = -1
			if src == k {
				fs[j] = tmp
				break
			}
			fs[j] = fs[src]
			j = src
		}
	}
}

// isSymptom: the finding follows a cause on its endpoint, or its rule is
// one the cause graph lists as a symptom.
func isSymptom(fd *diagnose.Finding) bool {
	return fd.Cause != "" || symptomRules[fd.Rule]
}

// symptomRules are the rules with a cause they are grouped under.
var symptomRules = func() map[string]bool {
	m := map[string]bool{}
	for rule := range causeGraph {
		if len(groupingCauses(rule)) > 0 {
			m[rule] = true
		}
	}
	return m
}()

// Worst returns the highest severity among findings, and false when there
// is none.
func Worst(fs []diagnose.Finding) (diagnose.Severity, bool) {
	if len(fs) == 0 {
		return diagnose.SevInfo, false
	}
	w := diagnose.SevInfo
	for i := range fs {
		w = max(w, fs[i].Severity)
	}
	return w, true
}
