// Package discovery finds vLLM targets that come and go: every A/AAAA
// record of a name (dns+host:port, a Kubernetes headless service), the SRV
// records of a service (dnssrv+_name._tcp.host), and Prometheus file_sd
// files (JSON or YAML, re-read when they change). It is a sources.Source:
// every target found joins the one poller of the run, and arrivals and
// departures reach the pipeline as they happen.
package discovery

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vtop-dev/vtop/sources"
)

// Spec is one discovery rule.
type Spec struct {
	Kind string // "dns", "dnssrv" or "file"
	Host string // dns: the name; dnssrv: _name._tcp.host
	Port int    // dns only
	Path string // file only
}

func (s Spec) String() string {
	switch s.Kind {
	case "dns":
		return "dns+" + net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	case "dnssrv":
		return "dnssrv+" + s.Host
	}
	return "file_sd " + s.Path
}

// IsSpec reports whether a target argument asks for discovery.
func IsSpec(arg string) bool {
	return strings.HasPrefix(arg, "dns+") || strings.HasPrefix(arg, "dnssrv+")
}

// ParseSpec reads dns+host:port or dnssrv+_name._tcp.host.
func ParseSpec(arg string) (Spec, error) {
	switch {
	case strings.HasPrefix(arg, "dns+"):
		host, port, err := net.SplitHostPort(strings.TrimPrefix(arg, "dns+"))
		p, perr := strconv.Atoi(port)
		if err != nil || perr != nil || host == "" || p <= 0 || p > 65535 {
			return Spec{}, fmt.Errorf("target %q: give dns+host:port", sources.Sanitize(arg, 80))
		}
		return Spec{Kind: "dns", Host: host, Port: p}, nil
	case strings.HasPrefix(arg, "dnssrv+"):
		name := strings.TrimPrefix(arg, "dnssrv+")
		if !strings.HasPrefix(name, "_") || strings.Count(name, ".") < 2 {
			return Spec{}, fmt.Errorf("target %q: give dnssrv+_service._tcp.domain", sources.Sanitize(arg, 80))
		}
		return Spec{Kind: "dnssrv", Host: name}, nil
	}
	return Spec{}, fmt.Errorf("target %q: not a discovery rule", sources.Sanitize(arg, 80))
}

// Source polls the static targets and whatever the specs find.
type Source struct {
	Specs    []Spec
	Static   []sources.Target
	Resolver *net.Resolver // nil: the system's
	Fetcher  *sources.Fetcher
	Poll     sources.PollerConfig
	// Refresh is how often DNS is asked again (default 30 s, as
	// Prometheus' dns_sd); files are checked every poll interval.
	Refresh time.Duration
	// OnError hears about a rule that failed (the last good answer stays).
	// The failure is also a Problem in the batches, until the rule works.
	OnError func(Spec, error)
	// MaxTargets bounds the targets polled, static and discovered
	// together (default DefaultMaxTargets); past it the rest are left out
	// and a Problem says so.
	MaxTargets int
	poll       atomic.Pointer[sources.PollSource] // while Run runs
}

// DefaultMaxTargets is the bound on targets when none is given: beyond a
// few thousand replicas, vtop is pointed at Prometheus (--prometheus).
const DefaultMaxTargets = 10_000

// MaxFileSD bounds a file_sd file: 10,000 targets are well under 1 MiB.
const MaxFileSD = 8 << 20

// Run discovers and polls until ctx ends.
func (s *Source) Run(ctx context.Context, out chan<- sources.Batch) error {
	if s.Refresh <= 0 {
		s.Refresh = 30 * time.Second
	}
	if s.Resolver == nil {
		s.Resolver = net.DefaultResolver
	}
	if s.MaxTargets <= 0 {
		s.MaxTargets = DefaultMaxTargets
	}
	// One poller for every target, static or found: --max-parallel, the
	// fair share and the start offsets cover them all (a rule naming
	// thousands must not open thousands of sockets at one instant). The
	// static targets are polled at once, whatever the rules take.
	ps := sources.NewPollSource(sources.NewPoller(s.Static, s.Fetcher, s.Poll))
	s.poll.Store(ps)
	pctx, stop := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		ps.Run(pctx, out)
	}()
	defer func() {
		stop()
		<-polled
	}()
	found := make([][]sources.Target, len(s.Specs)) // the last good answer of each rule
	files := make([]fileRead, len(s.Specs))
	failing := make([]string, len(s.Specs)) // each rule's problem now, "" when it works
	bounded := ""
	var polling []string // the names given to the poller last
	var lastDNS time.Time
	tick := time.NewTicker(s.Poll.Interval)
	defer tick.Stop()
	for {
		var problems []sources.Problem
		dns := lastDNS.IsZero() || time.Since(lastDNS) >= s.Refresh
		if dns {
			lastDNS = time.Now()
		}
		for i, sp := range s.Specs {
			var ts []sources.Target
			var err error
			switch {
			case sp.Kind == "file":
				var changed bool
				if ts, changed, err = files[i].read(ctx, sp.Path); err == nil && !changed {
					continue
				}
			case dns:
				ts, err = s.lookup(ctx, sp)
			default:
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			text := ""
			if err != nil {
				if s.OnError != nil {
					s.OnError(sp, err)
				}
				// The Problem's key names the rule already.
				text = sources.Sanitize(strings.TrimPrefix(err.Error(), sp.String()+": "), 200)
				if found[i] != nil {
					text += fmt.Sprintf(" (its last %d targets kept)", len(found[i]))
				}
			} else {
				found[i] = ts
			}
			if text != failing[i] {
				failing[i] = text
				problems = append(problems, sources.Problem{Key: sp.String(), Text: text, Fails: text != ""})
			}
		}
		seen := map[string]bool{}
		var want []sources.Target
		for _, ts := range append([][]sources.Target{s.Static}, found...) {
			for _, t := range ts {
				if !seen[t.Name] {
					seen[t.Name] = true
					want = append(want, t)
				}
			}
		}
		text := ""
		if len(want) > s.MaxTargets {
			// The static targets, then each rule's in its order: a storm
			// of new names cannot push out what was asked for by hand.
			text = fmt.Sprintf("%d targets found, more than the limit of %d: the first %d are polled (narrow the discovery rules)", len(want), s.MaxTargets, s.MaxTargets)
			want = want[:s.MaxTargets]
		}
		if text != bounded {
			bounded = text
			problems = append(problems, sources.Problem{Key: "discovery", Text: text})
		}
		if len(problems) > 0 && !sources.Send(ctx, out, sources.Batch{Now: time.Now(), Problems: problems}) {
			return nil
		}
		names := make([]string, len(want))
		for i, t := range want {
			names[i] = t.Name
		}
		if !slices.Equal(names, polling) {
			// The poller announces who arrived and departed, in order
			// with their scrapes.
			ps.Update(want)
			polling = names
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// PollNow makes every target polled now poll immediately (the UI's "r").
func (s *Source) PollNow() {
	if ps := s.poll.Load(); ps != nil {
		ps.PollNow()
	}
}

// lookup asks DNS for a rule's targets.
func (s *Source) lookup(ctx context.Context, sp Spec) ([]sources.Target, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var hostports []string
	switch sp.Kind {
	case "dns":
		ips, err := s.Resolver.LookupIPAddr(ctx, sp.Host)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", sp, err)
		}
		for _, ip := range ips {
			hostports = append(hostports, net.JoinHostPort(ip.IP.String(), strconv.Itoa(sp.Port)))
		}
	case "dnssrv":
		_, srvs, err := s.Resolver.LookupSRV(ctx, "", "", sp.Host)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", sp, err)
		}
		for _, r := range srvs {
			hostports = append(hostports, net.JoinHostPort(strings.TrimSuffix(r.Target, "."), strconv.Itoa(int(r.Port))))
		}
	}
	var out []sources.Target
	for _, hp := range hostports {
		t, err := sources.ParseTarget(hp)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", sp, err)
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b sources.Target) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// fileStamp remembers a file_sd file's size and time, to re-read it only
// when it changed.
type fileStamp struct {
	mod  time.Time
	size int64
}

func (f *fileStamp) changed(path string) (bool, error) {
	st, err := os.Stat(path)
	if err != nil {
		return false, fmt.Errorf("file_sd %s: %v", path, err)
	}
	if st.ModTime().Equal(f.mod) && st.Size() == f.size {
		return false, nil
	}
	f.mod, f.size = st.ModTime(), st.Size()
	return true, nil
}

// fileRead is one file_sd rule's reading: the stamp of what was read
// last, and the read in flight. A stat or read of the file runs apart from
// the discovery loop, one at a time: on a path whose read blocks (a hung
// NFS or FUSE mount, a FIFO named by mistake) the loop goes on, the rule
// is said to be stuck, the static and other targets keep being polled,
// and q or a signal still ends vtop. A call blocked in the kernel cannot be
// cancelled: it is left behind, and no second one joins it.
type fileRead struct {
	stamp  fileStamp
	flight chan fileResult // the read in flight, nil when none
	since  time.Time       // when it began
	stuck  bool            // the read in flight was said to be stuck
}

type fileResult struct {
	stamp   fileStamp
	ts      []sources.Target
	changed bool
	err     error
}

// fileWait is how long the loop waits for a file read before it goes on
// (a local file answers in microseconds); fileStuck is how long a read may
// take before the rule is said to be stuck.
const (
	fileWait  = 200 * time.Millisecond
	fileStuck = 3 * time.Second
)

// read returns the file's targets when it changed since the last read, or
// an error; a read still in flight past fileStuck is an error naming the
// file as stuck.
func (f *fileRead) read(ctx context.Context, path string) ([]sources.Target, bool, error) {
	if f.flight == nil {
		ch := make(chan fileResult, 1)
		f.flight, f.since, f.stuck = ch, time.Now(), false
		go func(st fileStamp) {
			changed, err := st.changed(path)
			if err != nil || !changed {
				ch <- fileResult{st, nil, changed, err}
				return
			}
			ts, err := readFileSD(path)
			ch <- fileResult{st, ts, true, err}
		}(f.stamp)
	}
	wait := time.NewTimer(fileWait)
	defer wait.Stop()
	select {
	case r := <-f.flight:
		f.flight, f.stamp = nil, r.stamp
		if f.stuck && r.err == nil && !r.changed {
			// Unchanged, but "stuck" was said: read it again, so what
			// replaces that is the file's state now.
			f.stamp, f.stuck = fileStamp{}, false
		}
		return r.ts, r.changed, r.err
	case <-ctx.Done():
		return nil, false, ctx.Err()
	case <-wait.C:
	}
	if d := time.Since(f.since); d >= fileStuck {
		f.stuck = true
		return nil, false, fmt.Errorf("file_sd %s: stuck: reading it has not returned for over %s (a hung mount?)", path, fileStuck)
	}
	return nil, false, nil
}

// The labels that name a target's pod and namespace, first found first:
// a relabelled one, Kubernetes SD's meta label as a file_sd generator
// copies it, the older exporters' spelling.
var (
	podLabels       = []string{"pod", "__meta_kubernetes_pod_name", "kubernetes_pod_name", "pod_name"}
	namespaceLabels = []string{"namespace", "__meta_kubernetes_namespace", "kubernetes_namespace"}
)

func firstLabel(labels map[string]string, names []string) string {
	for _, n := range names {
		if v := labels[n]; v != "" {
			return sources.Sanitize(v, 120)
		}
	}
	return ""
}

// readFileSD reads a Prometheus file_sd file: a list of {targets, labels};
// the labels __scheme__ and __metrics_path__ shape the URL, the pod and
// namespace ones name the target's pod (podLabels), others are ignored
// (vtop names targets by address).
func readFileSD(path string) ([]sources.Target, error) {
	// Opened without blocking (a FIFO with no writer would wait for one)
	// and read only when it is a regular file, up to MaxFileSD.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("file_sd %s: %v", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("file_sd %s: %v", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("file_sd %s: not a regular file (%s)", path, st.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSD+1))
	if err != nil {
		return nil, fmt.Errorf("file_sd %s: %v", path, err)
	}
	if len(b) > MaxFileSD {
		return nil, fmt.Errorf("file_sd %s: larger than %d MiB", path, MaxFileSD>>20)
	}
	var groups []struct {
		Targets []string          `yaml:"targets"`
		Labels  map[string]string `yaml:"labels"`
	}
	// YAML is a superset of JSON: one parser reads both forms.
	if err := yaml.Unmarshal(b, &groups); err != nil {
		return nil, fmt.Errorf("file_sd %s: %v", path, err)
	}
	out := []sources.Target{}
	for _, g := range groups {
		scheme, mpath := g.Labels["__scheme__"], g.Labels["__metrics_path__"]
		for _, hp := range g.Targets {
			spec := hp
			if scheme != "" || mpath != "" {
				if scheme == "" {
					scheme = "http"
				}
				spec = scheme + "://" + hp + mpath
			}
			t, err := sources.ParseTarget(spec)
			if err != nil {
				return nil, fmt.Errorf("file_sd %s: %v", path, err)
			}
			t.Pod, t.Namespace = firstLabel(g.Labels, podLabels), firstLabel(g.Labels, namespaceLabels)
			out = append(out, t)
		}
	}
	return out, nil
}
