// Command capfarm serves a real /metrics capture on many loopback ports, as
// a busy server's body changes: every counter, histogram bucket, _count and
// _sum advances on every request, so each scrape of each endpoint differs
// from the one before on most lines. Gauges stay as captured. It is the load
// for scripts/bench-prom.sh: a scraper that only parses changed lines saves
// nothing here, which is what a busy fleet gives it.
//
//	capfarm --capture testdata/dumps/X_full.txt --listen 127.0.0.1:43000 --endpoints 200
//
// Requests are counted by the first element of their path ("/h/metrics"
// counts as "h"; "/metrics" as "metrics"), so two scrapers of one endpoint
// can be told apart; GET /capfarm/counts on any port answers them so far
// ("h=12 metrics=10"), and they are printed on SIGTERM or SIGINT.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/klauspost/compress/gzip"
)

func main() {
	capture := flag.String("capture", "", "a text-format /metrics capture")
	listen := flag.String("listen", "127.0.0.1:43000", "first address; endpoint i listens on its port + i")
	n := flag.Int("endpoints", 200, "how many endpoints")
	ports := flag.String("ports-file", "", "write the ports listened on here, one a line")
	flag.Parse()
	if err := run(*capture, *listen, *n, *ports); err != nil {
		fmt.Fprintln(os.Stderr, "capfarm:", err)
		os.Exit(1)
	}
}

func run(capture, listen string, n int, portsFile string) error {
	raw, err := os.ReadFile(capture)
	if err != nil {
		return err
	}
	tpl, err := parseTemplate(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", capture, err)
	}
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--listen %s: loopback addresses only", listen)
	}
	port0, err := strconv.Atoi(p)
	if err != nil {
		return err
	}
	c := &counts{m: map[string]*atomic.Int64{}}
	var srvs []*http.Server
	var ports []string
	// These ports lie in Linux's ephemeral range, where another program's
	// outgoing connection may hold one (in TIME_WAIT for a minute): such a
	// port is skipped, and the ports file says which were taken.
	for port := port0; len(srvs) < n; port++ {
		if port > port0+2*n || port > 65535 {
			return fmt.Errorf("fewer than %d free ports from %d", n, port0)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			continue
		}
		ports = append(ports, strconv.Itoa(port))
		ep := newEndpoint(tpl, uint64(len(srvs)))
		s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/capfarm/counts" { // the bench reads the counts so far
				fmt.Fprint(w, c.String())
				return
			}
			c.add(r.URL.Path)
			ep.serve(w, r)
		})}
		srvs = append(srvs, s)
		go s.Serve(ln) //nolint:errcheck // ends with Shutdown
	}
	if portsFile != "" {
		if err := os.WriteFile(portsFile, []byte(strings.Join(ports, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("capfarm: %d endpoints on %s:%s-%s, %d lines, %d advancing\n", n, host, ports[0], ports[len(ports)-1], len(tpl.lines), tpl.advancing())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	for _, s := range srvs {
		s.Shutdown(context.Background()) //nolint:errcheck // exiting
	}
	fmt.Fprintln(os.Stderr, "capfarm: scrapes served:", c.String())
	return nil
}

// counts are requests by the first element of their path.
type counts struct {
	mu sync.Mutex
	m  map[string]*atomic.Int64
}

func (c *counts) add(path string) {
	k, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	c.mu.Lock()
	v := c.m[k]
	if v == nil {
		v = new(atomic.Int64)
		c.m[k] = v
	}
	c.mu.Unlock()
	v.Add(1)
}

func (c *counts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ks []string
	for k := range c.m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, " %s=%d", k, c.m[k].Load())
	}
	return strings.TrimSpace(b.String())
}

// line is one line of the capture: the text before and after its value,
// and how the value moves.
type line struct {
	head, tail string // a comment line is all head
	value      float64
	sample     bool
	step       step
	hist       int // the bucket's place in its series (step == stepBucket)
	series     int // its histogram series' index (buckets, _count, _sum)
}

type step uint8

const (
	stepNone    step = iota // a gauge, or a comment
	stepCounter             // += a few
	stepBucket              // += its share of the series' new observations
	stepCount               // a histogram's or summary's _count: += the new observations
	stepSum                 // its _sum: += their total
)

type template struct {
	lines   []line
	buckets []int // buckets per histogram series
}

func (t *template) advancing() int {
	k := 0
	for _, l := range t.lines {
		if l.step != stepNone {
			k++
		}
	}
	return k
}

// parseTemplate splits a text-format body into lines, finding each
// sample's value and, from the # TYPE lines, whether and how it advances.
func parseTemplate(raw []byte) (*template, error) {
	kinds := map[string]string{}
	seriesOf := map[string]int{}
	t := &template{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		s := sc.Text()
		if strings.HasPrefix(s, "#") || strings.TrimSpace(s) == "" {
			if f := strings.Fields(s); len(f) == 4 && f[1] == "TYPE" {
				kinds[f[2]] = f[3]
			}
			t.lines = append(t.lines, line{head: s})
			continue
		}
		name, labels, head, rest, err := splitSample(s)
		if err != nil {
			return nil, err
		}
		vs, tail, _ := strings.Cut(rest, " ")
		if tail != "" {
			tail = " " + tail
		}
		v, err := strconv.ParseFloat(vs, 64)
		if err != nil {
			return nil, fmt.Errorf("line %q: value: %w", s, err)
		}
		l := line{head: head, tail: tail, value: v, sample: true}
		kind, suffix := kindOf(kinds, name)
		key := func() int {
			k := strings.TrimSuffix(name, suffix) + "{" + withoutLe(labels)
			i, ok := seriesOf[k]
			if !ok {
				i = len(t.buckets)
				seriesOf[k] = i
				t.buckets = append(t.buckets, 0)
			}
			return i
		}
		switch {
		case kind == "counter" && suffix != "_created":
			l.step = stepCounter
		case kind == "histogram" && suffix == "_bucket":
			l.step, l.series = stepBucket, key()
			l.hist = t.buckets[l.series]
			t.buckets[l.series]++
		case (kind == "histogram" || kind == "summary") && suffix == "_count":
			l.step, l.series = stepCount, key()
		case (kind == "histogram" || kind == "summary") && suffix == "_sum":
			l.step, l.series = stepSum, key()
		}
		t.lines = append(t.lines, l)
	}
	return t, sc.Err()
}

// splitSample cuts "name{labels} value [ts]" into the name, the labels'
// text, the head up to and including the space before the value, and the
// rest.
func splitSample(s string) (name, labels, head, rest string, err error) {
	if i := strings.IndexByte(s, '{'); i >= 0 {
		j := strings.LastIndexByte(s, '}')
		if j < i || j+1 >= len(s) || s[j+1] != ' ' {
			return "", "", "", "", fmt.Errorf("line %q: labels not closed", s)
		}
		return s[:i], s[i+1 : j], s[:j+2], s[j+2:], nil
	}
	i := strings.IndexByte(s, ' ')
	if i < 0 {
		return "", "", "", "", fmt.Errorf("line %q: no value", s)
	}
	return s[:i], "", s[:i+1], s[i+1:], nil
}

// kindOf finds a sample's family type: its own name's, or its name's less
// a suffix the exposition adds.
func kindOf(kinds map[string]string, name string) (kind, suffix string) {
	for _, suf := range []string{"_bucket", "_count", "_sum", "_created", "_total"} {
		if base, ok := strings.CutSuffix(name, suf); ok {
			if k, ok := kinds[base]; ok {
				return k, suf
			}
		}
	}
	if k, ok := kinds[name]; ok {
		if strings.HasSuffix(name, "_created") {
			return k, "_created"
		}
		return k, ""
	}
	return "", ""
}

// withoutLe is a label set without its le pair, so a series' buckets,
// _count and _sum share one key.
func withoutLe(labels string) string {
	var kept []string
	for _, p := range strings.Split(labels, ",") {
		if !strings.HasPrefix(p, "le=") {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ",")
}

// endpoint is one served replica: the template's values, moving.
type endpoint struct {
	mu   sync.Mutex
	t    *template
	vals []float64
	obs  []float64 // new observations per histogram series, this request
	rng  *rand.Rand
	buf  bytes.Buffer
	zbuf bytes.Buffer
	zw   *gzip.Writer
}

func newEndpoint(t *template, seed uint64) *endpoint {
	e := &endpoint{t: t, vals: make([]float64, len(t.lines)), obs: make([]float64, len(t.buckets)),
		rng: rand.New(rand.NewPCG(seed, 23))}
	for i, l := range t.lines {
		e.vals[i] = l.value
	}
	e.zw, _ = gzip.NewWriterLevel(&e.zbuf, gzip.BestSpeed)
	return e
}

// advance moves every counter and bucket: each histogram series gets
// between one and two times its bucket count of new observations, so that
// every bucket, cumulative as they are, grows.
func (e *endpoint) advance() {
	for i, nb := range e.t.buckets {
		e.obs[i] = float64(nb + e.rng.IntN(nb+1))
	}
	for i, l := range e.t.lines {
		switch l.step {
		case stepCounter:
			e.vals[i] += float64(1 + e.rng.IntN(50))
		case stepBucket:
			// Observations spread evenly over the lower half of the
			// buckets: quantiles stay finite, and every bucket grows.
			half := float64(e.t.buckets[l.series]+1) / 2
			e.vals[i] += math.Floor(e.obs[l.series] * min(1, float64(l.hist+1)/half))
		case stepCount:
			e.vals[i] += max(e.obs[l.series], 1)
		case stepSum:
			e.vals[i] += max(e.obs[l.series], 1) * (0.01 + e.rng.Float64())
		}
	}
}

func (e *endpoint) serve(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	e.buf.Reset()
	var num []byte
	for i, l := range e.t.lines {
		e.buf.WriteString(l.head)
		if l.sample {
			num = appendPyFloat(num[:0], e.vals[i])
			e.buf.Write(num)
			e.buf.WriteString(l.tail)
		}
		e.buf.WriteByte('\n')
	}
	body := e.buf.Bytes()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		e.zbuf.Reset()
		e.zw.Reset(&e.zbuf)
		if _, err := e.zw.Write(body); err != nil || e.zw.Close() != nil {
			http.Error(w, "gzip failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		body = e.zbuf.Bytes()
	}
	_, _ = w.Write(body) // a scraper that went away gets the next body next time
}

// appendPyFloat writes a value as Python's repr does for the whole numbers
// a counter holds ("58027.0"), and as Go's shortest form otherwise.
func appendPyFloat(dst []byte, v float64) []byte {
	if v == math.Trunc(v) && math.Abs(v) < 1e16 {
		dst = strconv.AppendFloat(dst, v, 'f', -1, 64)
		return append(dst, ".0"...)
	}
	return strconv.AppendFloat(dst, v, 'g', -1, 64)
}
