// Package discovery finds vLLM targets that come and go: every A/AAAA
// record of a name (dns+host:port, a Kubernetes headless service), the SRV
// records of a service (dnssrv+_name._tcp.host), and Prometheus file_sd
// files (JSON or YAML, re-read when they change). It is a sources.Source:
// each target found is polled by its own poller, and arrivals and
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
	"sync"
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
}

// DefaultMaxTargets is the bound on targets when none is given: beyond a
// few thousand replicas, vtop is pointed at Prometheus (--prometheus).
const DefaultMaxTargets = 10_000

// MaxFileSD bounds a file_sd file: 10,000 targets are well under 1 MiB.
const MaxFileSD = 8 << 20

type running struct {
	cancel context.CancelFunc
	done   chan struct{}
}

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
	live := map[string]*running{}
	var wg sync.WaitGroup
	defer func() {
		for _, r := range live {
			r.cancel()
		}
		wg.Wait()
	}()
	// One slot pool for every target, static or found: --max-parallel
	// bounds them all, and their first polls are spread (a rule naming
	// thousands must not open thousands of sockets at one instant).
	pc := s.Poll
	pc.Slots = sources.NewSlots(pc.MaxParallel)
	start := func(t sources.Target) {
		tctx, cancel := context.WithCancel(ctx)
		r := &running{cancel: cancel, done: make(chan struct{})}
		live[t.Name] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(r.done)
			ps := sources.NewPollSource(sources.NewPoller([]sources.Target{t}, s.Fetcher, pc))
			ps.Run(tctx, out)
		}()
	}
	for _, t := range s.Static {
		start(t)
	}
	found := make([][]sources.Target, len(s.Specs)) // the last good answer of each rule
	stamps := make([]fileStamp, len(s.Specs))
	failing := make([]string, len(s.Specs)) // each rule's problem now, "" when it works
	bounded := ""
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
				if ts, changed, err = readFileSDCtx(ctx, &stamps[i], sp.Path); err == nil && !changed {
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
		want := map[string]sources.Target{}
		var order []string
		for _, t := range s.Static {
			if _, dup := want[t.Name]; !dup {
				want[t.Name] = t
				order = append(order, t.Name)
			}
		}
		for _, ts := range found {
			for _, t := range ts {
				if _, dup := want[t.Name]; !dup {
					want[t.Name] = t
					order = append(order, t.Name)
				}
			}
		}
		text := ""
		if len(order) > s.MaxTargets {
			// The static targets, then each rule's in its order: a storm
			// of new names cannot push out what was asked for by hand.
			for _, name := range order[s.MaxTargets:] {
				delete(want, name)
			}
			text = fmt.Sprintf("%d targets found, more than the limit of %d: the first %d are polled (narrow the discovery rules)", len(order), s.MaxTargets, s.MaxTargets)
		}
		if text != bounded {
			bounded = text
			problems = append(problems, sources.Problem{Key: "discovery", Text: text})
		}
		var gone []string
		for name, r := range live {
			if _, ok := want[name]; !ok {
				r.cancel()
				<-r.done
				delete(live, name)
				gone = append(gone, name)
			}
		}
		if len(gone) > 0 || len(problems) > 0 {
			slices.Sort(gone)
			if !sources.Send(ctx, out, sources.Batch{Now: time.Now(), Departed: gone, Problems: problems}) {
				return nil
			}
		}
		var names []string
		for name := range want {
			if live[name] == nil {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, n := range names {
			start(want[n]) // its poller announces it
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
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

// readFileSDCtx reads a file_sd file when it changed since stamp, giving
// up when ctx ends: a stat or read that blocks (a FIFO named by mistake, a
// hung network mount) must not keep vtop alive after q or a signal. The
// blocked call is left behind; the process is ending.
func readFileSDCtx(ctx context.Context, stamp *fileStamp, path string) ([]sources.Target, bool, error) {
	type result struct {
		ts      []sources.Target
		changed bool
		err     error
	}
	ch := make(chan result, 1)
	st := *stamp
	go func() {
		changed, err := st.changed(path)
		if err != nil || !changed {
			ch <- result{nil, changed, err}
			return
		}
		ts, err := readFileSD(path)
		ch <- result{ts, true, err}
	}()
	select {
	case r := <-ch:
		*stamp = st
		return r.ts, r.changed, r.err
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
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
