package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/vtop-dev/vtop/diagnose"
	"github.com/vtop-dev/vtop/diagnose/detect"
	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/discovery"
	"github.com/vtop-dev/vtop/themes"
)

// options is the resolved configuration of one run.
type options struct {
	targets     []sources.Target
	once        bool
	output      string
	interval    time.Duration
	window      time.Duration
	timeout     time.Duration
	maxBody     int64
	maxSamples  int
	maxParallel int
	logFile     string
	record      string // --record FILE
	recordMax   int64
	http        sources.HTTPConfig
	configFile  string
	demo        bool
	theme       string
	actions     []action // the config file's, for the TUI
	note        string   // said in the TUI's header for its first minute (the demo's)
	sloProfile  string
	gpu         string
	prom        promOptions
	dcgm        []string           // dcgm-exporter URLs (direct mode)
	discover    []discovery.Spec   // dns+, dnssrv+ targets and --file-sd files
	rules       detect.RulesConfig // thresholds, for durations, SLO profile
	// gpuSource replaces NVML (the demo passes its simulated GPUs), and
	// procTrees, indexed like targets, replace the /proc join (the demo's
	// replicas run in vtop's own process, with simulated PIDs).
	gpuSource sources.GPUSource
	procTrees []sources.ProcTree
}

// promOptions say how to read a Prometheus-compatible server.
type promOptions struct {
	url      string
	selector string
	headers  map[string]string
	backfill time.Duration
	at       time.Time // --at: a --once report of the fleet as it was then
}

// fileConfig is the YAML config file. Keys are the long flag names; targets
// may be strings or objects that carry what /metrics cannot tell.
type fileConfig struct {
	Targets     []fileTarget                 `yaml:"targets"`
	Rules       map[string]detect.RuleConfig `yaml:"-"`
	SLOProfiles []diagnose.SLO               `yaml:"-"` // overrides and additions, merged over the built-ins
	Values      map[string]string            `yaml:"-"`
	Actions     []action                     `yaml:"-"` // the user's commands on the selection (TUI)
}

type fileTarget struct {
	URL        string `yaml:"url"`
	MaxNumSeqs int    `yaml:"max_num_seqs"`
	Pool       string `yaml:"pool"` // replicas compared by replica_imbalance (default: the model name)
}

func (t *fileTarget) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		t.URL = n.Value
		return nil
	}
	type plain fileTarget
	return n.Decode((*plain)(t))
}

// newFlagSet declares every flag. Each long flag FOO-BAR can also come from
// the environment as VTOP_FOO_BAR and from the config file as foo-bar.
func newFlagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("vtop", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.Bool("once", false, "poll for one window, print a report and exit with a monitoring-plugin status (0 ok, 1 warning, 2 critical, 3 unknown)")
	fs.StringP("output", "o", "text", "report format with --once: text, json or markdown (for the incident channel)")
	fs.DurationP("interval", "i", time.Second, "poll interval of each target")
	fs.DurationP("window", "w", 60*time.Second, "window for percentiles and rates")
	fs.Duration("timeout", sources.DefaultTimeout, "timeout of one scrape (connect, headers and body)")
	fs.String("max-body", "16MiB", "largest /metrics body accepted, after decompression")
	fs.Int("max-samples", sources.DefaultMaxSamples, "most samples accepted from one scrape")
	fs.Int("max-parallel", 64, "scrapes in flight at once across all targets")
	fs.String("prometheus", "", "read the fleet from this Prometheus-compatible server (http(s)://host:port): history at open, then live")
	fs.String("selector", "", "with --prometheus: only replicas whose series match these label matchers, e.g. '{namespace=\"llm\"}'")
	fs.StringArray("header", nil, "with --prometheus: extra HTTP header 'Name: value' (e.g. X-Scope-OrgID for Mimir tenants; repeatable)")
	fs.Duration("backfill", 30*time.Minute, "with --prometheus: history read at open (what the rules' for durations, the leak fit and sparklines need)")
	fs.String("at", "", "with --once --prometheus: report the fleet as it was at this moment (RFC 3339, a UTC time of day today, or -90m for 90 minutes ago)")
	fs.StringArray("file-sd", nil, "poll the targets of this Prometheus file_sd file (JSON or YAML), re-read when it changes (repeatable)")
	fs.StringArray("dcgm", nil, "read GPUs from this dcgm-exporter endpoint (host:port or URL; repeatable) instead of NVML, joined to the targets by host")
	fs.Bool("demo", false, "start a built-in simulated vLLM fleet on loopback and watch it")
	fs.String("theme", "dark", "color theme: dark, light, high-contrast, mono (mono by default when NO_COLOR is set; always when TERM=dumb)")
	fs.String("slo", "chat", "latency targets: chat, code, batch, rag, agent")
	fs.String("gpu", "auto", "GPU source: auto (NVML when present), nvml, none")
	fs.String("log", "", "write diagnostics to this file (nothing is printed while the TUI runs)")
	fs.String("record", "", "record every scrape body, GPU reading and evaluation to this file, for vtop replay (docs/recording.md)")
	fs.String("record-max", "1GiB", "disk a recording may take: past half of it FILE moves to FILE.1 and a new FILE starts")
	fs.String("bearer-token-file", "", "send the token in this file as a bearer token (or set VTOP_BEARER_TOKEN)")
	fs.String("basic-auth-user", "", "HTTP basic auth user; the password comes from --basic-auth-password-file or VTOP_BASIC_AUTH_PASSWORD")
	fs.String("basic-auth-password-file", "", "file holding the basic auth password")
	fs.String("ca-file", "", "PEM CA bundle to verify https targets")
	fs.String("cert-file", "", "client certificate (PEM) for https targets")
	fs.String("key-file", "", "client key (PEM) for --cert-file")
	fs.Bool("insecure-skip-verify", false, "do not verify https certificates (only when you must)")
	fs.String("config", "", "config file (default $VTOP_CONFIG, then $XDG_CONFIG_HOME/vtop/config.yaml)")
	fs.BoolP("version", "V", false, "print the version and exit")
	fs.BoolP("help", "h", false, "show this help")
	return fs
}

func envName(flag string) string {
	return "VTOP_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// configPath finds the config file: --config, $VTOP_CONFIG, then the XDG default.
func configPath(fs *pflag.FlagSet, getenv func(string) string) (string, bool) {
	if p, _ := fs.GetString("config"); p != "" {
		return p, true
	}
	if p := getenv("VTOP_CONFIG"); p != "" {
		return p, true
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", false
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "vtop", "config.yaml"), false
}

func loadFile(path string, explicit bool) (*fileConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return &fileConfig{}, nil
		}
		return nil, fmt.Errorf("config file: %v", err)
	}
	var raw map[string]yaml.Node
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("config file %s: %v", path, err)
	}
	fc := &fileConfig{Values: map[string]string{}}
	for k, n := range raw {
		switch k {
		case "targets":
			if err := n.Decode(&fc.Targets); err != nil {
				return nil, fmt.Errorf("config file %s: targets: %v", path, err)
			}
			continue
		case "rules":
			rules, err := parseRules(&n)
			if err != nil {
				return nil, fmt.Errorf("config file %s: %v", path, err)
			}
			fc.Rules = rules
			continue
		case "actions":
			as, err := parseActions(&n)
			if err != nil {
				return nil, fmt.Errorf("config file %s: %v", path, err)
			}
			fc.Actions = as
			continue
		case "slo_profiles":
			profiles, err := parseSLOProfiles(&n)
			if err != nil {
				return nil, fmt.Errorf("config file %s: %v", path, err)
			}
			fc.SLOProfiles = profiles
			continue
		}
		if n.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("config file %s: %s must be a single value", path, k)
		}
		fc.Values[k] = n.Value
	}
	// A config file is untrusted: the names it gives (profiles, pools,
	// rules) reach findings and the screen. Values and URLs go through
	// their own parsers, which quote them sanitized.
	sources.SanitizeAll(&fc.SLOProfiles, sources.MaxLabelLen)
	sources.SanitizeAll(&fc.Rules, sources.MaxLabelLen)
	for i := range fc.Targets {
		fc.Targets[i].Pool = sources.Sanitize(fc.Targets[i].Pool, sources.MaxLabelLen)
	}
	return fc, nil
}

// layer fills the flags not given on the command line from the VTOP_*
// environment, then the config file: flags > environment > file > defaults.
// Every subcommand that reads configuration goes through it; only is the
// subset of flags a subcommand takes from there (all when empty).
func layer(fs *pflag.FlagSet, getenv func(string) string, fc *fileConfig, path string, only ...string) error {
	var setErr error
	fs.VisitAll(func(fl *pflag.Flag) {
		if fl.Changed || setErr != nil || fl.Name == "config" || fl.Name == "help" || fl.Name == "version" {
			return
		}
		if len(only) > 0 && !slices.Contains(only, fl.Name) {
			return
		}
		if v := getenv(envName(fl.Name)); v != "" {
			if err := fs.Set(fl.Name, v); err != nil {
				setErr = fmt.Errorf("%s=%q: %v", envName(fl.Name), v, err)
			}
			return
		}
		if v, ok := fc.Values[fl.Name]; ok {
			if err := fs.Set(fl.Name, v); err != nil {
				setErr = fmt.Errorf("config file %s: %s: %v", path, fl.Name, err)
			}
		}
	})
	return setErr
}

// resolve applies flags > VTOP_* environment > config file > defaults.
func resolve(args []string, getenv func(string) string) (*options, *pflag.FlagSet, error) {
	fs := newFlagSet()
	if err := fs.Parse(args); err != nil {
		return nil, fs, err
	}
	path, explicit := configPath(fs, getenv)
	fc, err := loadFile(path, explicit)
	if err != nil {
		return nil, fs, err
	}
	for k := range fc.Values {
		if fs.Lookup(k) == nil || k == "config" {
			return nil, fs, fmt.Errorf("config file %s: unknown key %q", path, k)
		}
	}
	if err := layer(fs, getenv, fc, path); err != nil {
		return nil, fs, err
	}
	o := &options{configFile: path, actions: fc.Actions}
	o.once, _ = fs.GetBool("once")
	o.output, _ = fs.GetString("output")
	o.interval, _ = fs.GetDuration("interval")
	o.window, _ = fs.GetDuration("window")
	o.timeout, _ = fs.GetDuration("timeout")
	o.maxSamples, _ = fs.GetInt("max-samples")
	o.maxParallel, _ = fs.GetInt("max-parallel")
	o.logFile, _ = fs.GetString("log")
	o.demo, _ = fs.GetBool("demo")
	o.theme, _ = fs.GetString("theme")
	o.sloProfile, _ = fs.GetString("slo")
	o.gpu, _ = fs.GetString("gpu")
	o.record, _ = fs.GetString("record")
	rm, _ := fs.GetString("record-max")
	if o.recordMax, err = parseSize(rm); err != nil {
		return nil, fs, fmt.Errorf("--record-max: %v", err)
	}
	if o.recordMax < 1<<20 {
		return nil, fs, fmt.Errorf("--record-max must be at least 1MiB")
	}
	mb, _ := fs.GetString("max-body")
	if o.maxBody, err = parseSize(mb); err != nil {
		return nil, fs, fmt.Errorf("--max-body: %v", err)
	}
	switch o.output {
	case "text", "json", "markdown":
	default:
		return nil, fs, fmt.Errorf("--output must be text, json or markdown, not %q", o.output)
	}
	if err := o.validateNumbers(); err != nil {
		return nil, fs, err
	}
	switch o.gpu {
	case "auto", "nvml", "none":
	default:
		return nil, fs, fmt.Errorf("--gpu must be auto, nvml or none, not %q", o.gpu)
	}
	fileSD, _ := fs.GetStringArray("file-sd")
	for _, f := range fileSD {
		o.discover = append(o.discover, discovery.Spec{Kind: "file", Path: f})
	}
	dcgmSpecs, _ := fs.GetStringArray("dcgm")
	for _, d := range dcgmSpecs {
		t, err := sources.ParseTarget(d)
		if err != nil {
			return nil, fs, fmt.Errorf("--dcgm: %v", err)
		}
		o.dcgm = append(o.dcgm, t.URL)
	}
	if err := o.resolveProm(fs); err != nil {
		return nil, fs, err
	}
	if err := o.resolveLook(fs, getenv); err != nil {
		return nil, fs, err
	}
	if err := o.resolveAuth(fs, getenv); err != nil {
		return nil, fs, err
	}
	if err := o.resolveTargets(fs.Args(), fc, getenv); err != nil {
		return nil, fs, err
	}
	if o.rules, err = rulesConfig(fc, o.sloProfile); err != nil {
		return nil, fs, err
	}
	return o, fs, nil
}

// resolveProm reads --prometheus and the flags that go with it.
func (o *options) resolveProm(fs *pflag.FlagSet) error {
	p := &o.prom
	p.url, _ = fs.GetString("prometheus")
	p.selector, _ = fs.GetString("selector")
	p.backfill, _ = fs.GetDuration("backfill")
	hs, _ := fs.GetStringArray("header")
	at, _ := fs.GetString("at")
	if p.url == "" {
		if p.selector != "" || len(hs) > 0 || at != "" {
			return errors.New("--selector, --header and --at go with --prometheus")
		}
		return nil
	}
	if at != "" {
		if !o.once {
			return errors.New("--at goes with --once: the live screen follows the server's newest data")
		}
		t, err := parseMoment(at, time.Now())
		if err != nil {
			return err
		}
		p.at = t
	}
	if len(fs.Args()) > 0 {
		return errors.New("give targets or --prometheus, not both")
	}
	if p.backfill < 0 {
		return errors.New("--backfill must not be negative")
	}
	if p.backfill > maxBackfill {
		return fmt.Errorf("--backfill %s is more than %s: read older history in Grafana, or give --at with --once", p.backfill, maxBackfill)
	}
	for _, h := range hs {
		k, v, ok := strings.Cut(h, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || strings.ContainsAny(k, " \t\r\n") || strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("--header %q: give 'Name: value'", sources.Sanitize(k, 40))
		}
		if strings.EqualFold(k, "Authorization") {
			return errors.New("--header: credentials go in --bearer-token-file, VTOP_BEARER_TOKEN or basic auth, not on the command line")
		}
		if p.headers == nil {
			p.headers = map[string]string{}
		}
		p.headers[k] = v
	}
	return nil
}

// resolveLook checks the theme (the SLO profile is checked with the rules'
// configuration, which may add profiles). NO_COLOR picks the monochrome
// theme unless one was asked for (flag, VTOP_THEME or the config file, as
// no-color.org asks); a dumb terminal gets it whatever was asked.
func (o *options) resolveLook(fs *pflag.FlagSet, getenv func(string) string) error {
	if (getenv("NO_COLOR") != "" && !fs.Lookup("theme").Changed) || getenv("TERM") == "dumb" {
		o.theme = themes.Mono
	}
	th, err := themes.ByName(o.theme)
	if err != nil {
		return fmt.Errorf("--theme: %v", err)
	}
	o.theme = th.Name
	return nil
}

func (o *options) resolveAuth(fs *pflag.FlagSet, getenv func(string) string) error {
	h := &o.http
	h.Timeout, h.MaxBody = o.timeout, o.maxBody
	h.BearerTokenFile, _ = fs.GetString("bearer-token-file")
	h.BearerToken = getenv("VTOP_BEARER_TOKEN")
	h.BasicUser, _ = fs.GetString("basic-auth-user")
	h.CAFile, _ = fs.GetString("ca-file")
	h.CertFile, _ = fs.GetString("cert-file")
	h.KeyFile, _ = fs.GetString("key-file")
	h.InsecureSkipVerify, _ = fs.GetBool("insecure-skip-verify")
	if h.BearerTokenFile != "" && h.BearerToken != "" {
		return errors.New("give the bearer token once: --bearer-token-file or VTOP_BEARER_TOKEN, not both")
	}
	if h.BasicUser != "" {
		if (h.BearerTokenFile != "") || h.BearerToken != "" {
			return errors.New("basic auth and a bearer token cannot both be used")
		}
		pf, _ := fs.GetString("basic-auth-password-file")
		switch {
		case pf != "":
			b, err := os.ReadFile(pf)
			if err != nil {
				return fmt.Errorf("--basic-auth-password-file: %v", err)
			}
			h.BasicPassword = strings.TrimRight(string(b), "\r\n")
		default:
			h.BasicPassword = getenv("VTOP_BASIC_AUTH_PASSWORD")
		}
	}
	if (h.CertFile == "") != (h.KeyFile == "") {
		return errors.New("--cert-file and --key-file go together")
	}
	return nil
}

// resolveTargets: command-line targets, else VTOP_TARGETS, else the config
// file, else vLLM's default localhost:8000.
func (o *options) resolveTargets(args []string, fc *fileConfig, getenv func(string) string) error {
	var specs []fileTarget
	switch {
	case o.prom.url != "":
		return nil // the server names the replicas
	case len(args) > 0:
		for _, a := range args {
			specs = append(specs, fileTarget{URL: a})
		}
	case getenv("VTOP_TARGETS") != "":
		for _, a := range strings.FieldsFunc(getenv("VTOP_TARGETS"), func(r rune) bool { return r == ',' || r == ' ' }) {
			specs = append(specs, fileTarget{URL: a})
		}
	case len(fc.Targets) > 0:
		specs = fc.Targets
	case len(o.discover) > 0:
		return nil // --file-sd names them
	case o.demo:
		return nil // the demo fleet supplies its own targets
	default:
		specs = []fileTarget{{URL: sources.DefaultTarget}}
	}
	// Per-target details from the config file apply to a target named on the
	// command line too.
	extra := map[string]fileTarget{}
	for _, t := range fc.Targets {
		if pt, err := sources.ParseTarget(t.URL); err == nil {
			extra[pt.URL] = t
		}
	}
	seen := map[string]bool{}
	for _, s := range specs {
		if discovery.IsSpec(s.URL) {
			sp, err := discovery.ParseSpec(s.URL)
			if err != nil {
				return err
			}
			o.discover = append(o.discover, sp)
			continue
		}
		t, err := sources.ParseTarget(s.URL)
		if err != nil {
			return err
		}
		if seen[t.URL] {
			continue
		}
		seen[t.URL] = true
		t.MaxNumSeqs, t.Pool = s.MaxNumSeqs, s.Pool
		if t.MaxNumSeqs == 0 {
			t.MaxNumSeqs = extra[t.URL].MaxNumSeqs
		}
		if t.Pool == "" {
			t.Pool = extra[t.URL].Pool
		}
		o.targets = append(o.targets, t)
	}
	if len(o.targets) > discovery.DefaultMaxTargets {
		// The bound discovered targets have: each target keeps its own
		// history, so memory grows with them.
		return fmt.Errorf("%d targets, more than the limit of %d: point vtop at Prometheus (--prometheus) for a larger fleet", len(o.targets), discovery.DefaultMaxTargets)
	}
	return nil
}

// maxBackfill bounds --backfill: a week of history is more than any rule
// or sparkline looks at, and past it a typo (--backfill 100000h) would
// read a server's whole retention.
const maxBackfill = 7 * 24 * time.Hour

// parseSize reads 16MiB, 512KiB, 1048576.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q (use e.g. 16MiB)", s)
	}
	v, ok := mulSize(n, mult)
	if !ok {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return v, nil
}

// envHelp lists the environment variables, for --help.
func envHelp(fs *pflag.FlagSet) string {
	var names []string
	fs.VisitAll(func(fl *pflag.Flag) {
		if fl.Name != "help" && fl.Name != "version" && fl.Name != "config" {
			names = append(names, envName(fl.Name))
		}
	})
	sort.Strings(names)
	return strings.Join(names, " ")
}
