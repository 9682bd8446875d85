// Package promapi reads vLLM replicas out of a Prometheus-compatible server
// (Prometheus, Thanos Query, Mimir, VictoriaMetrics) through the HTTP API
// v1. It rebuilds, for every replica and every point in time, the /metrics
// exposition the server scraped and hands it to the same normalizer a
// direct scrape goes through, so diagnosis runs unchanged.
package promapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	jsoniter "github.com/json-iterator/go"
	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/dcgm"
)

// Config says which server to read and how hard.
type Config struct {
	URL      string            // http(s)://host:port[/prefix] of the API
	Selector string            // optional PromQL matchers: {namespace="llm"}
	Headers  map[string]string // extra headers (X-Scope-OrgID for Mimir/Cortex tenants)
	Fetcher  *sources.Fetcher  // TLS and credentials, as for targets
	Timeout  time.Duration     // one query (default 10 s)
	MaxBody  int64             // largest response (default 256 MiB)
	// MaxSeries bounds the vLLM series the selector may match (default
	// 2,000,000): past it vtop asks for a narrower --selector rather than
	// load the server.
	MaxSeries int
	// Interval overrides the scrape interval detected from the data.
	Interval time.Duration
	// Backfill is how much history to read at open (0: none).
	Backfill time.Duration
	// FullRes is the newest part of the backfill read at the scrape step:
	// the window and the rules' longest hold. Older history is read at a
	// coarser step. 0: all of it at the scrape step.
	FullRes time.Duration
	// Warm is how many scrapes before the newest FullRes are read at the
	// scrape step too: a baseline that learns scrape by scrape and
	// judges after so many has learned them before any change in the
	// newest part, as it would have watching. A coarse step's reading
	// is one observation where watching made several: at 30 s scrapes
	// the newest 12 minutes held 24, and a change 6 minutes before the
	// end met a baseline of 26 observations that had not begun to judge.
	Warm int
	// Once stops after the backfill (vtop --once).
	Once bool
	// KeepBody hands each replica's rebuilt exposition on in Scrape.Body
	// (a copy the consumer may keep), for --record: a replay parses the
	// same text with the same normalizer.
	KeepBody bool
	// QueryOnly refreshes through the query API even where the server
	// has /federate (tests of the path Thanos and Mimir take).
	QueryOnly bool
	Clock     func() time.Time // time.Now when nil
	// Log, when set, gets a debug line per request: what was asked (URL
	// and form, never the headers, which carry the credentials), the
	// status, the bytes and how long until the body was read.
	Log *slog.Logger
}

// Client is an API client bound to one server.
type Client struct {
	cfg      Config
	api      v1.API
	name     string            // the server, for messages
	sel      string            // the selector's matchers, rendered, "" for none
	families []family          // vLLM families present, in schema order
	dcgm     []string          // dcgm-exporter names present that vtop reads
	help     map[string]string // HELP texts the server keeps (metadata API)
	interval time.Duration
	http     *http.Client
	base     *url.URL // the server's URL; endpoint() adds the API path to it
	federate bool     // refresh through /federate (Prometheus, VictoriaMetrics)

	queries atomic.Int64 // requests made
	bytes   atomic.Int64 // response bytes read
}

// Stats says how much was asked of the server so far: requests and
// response bytes.
func (c *Client) Stats() (queries, bytes int64) { return c.queries.Load(), c.bytes.Load() }

// seriesPerReplica is about how many series one vLLM engine exposes.
const seriesPerReplica = 400

// family is one schema family with the names the server holds for it.
type family struct {
	name  string
	typ   string
	names []string
	vllm  bool // false: process families, kept for vLLM's targets only
}

// Open checks the server and the selector, finds the vLLM families present
// and the scrape interval. Every error names the server and the query.
func Open(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 256 << 20
	}
	if cfg.MaxSeries <= 0 {
		cfg.MaxSeries = 2_000_000
	}
	// /federate answers only "now": a clock fixed at a past moment (--at)
	// reads through the query API.
	tryFederate := cfg.Clock == nil && !cfg.QueryOnly
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--prometheus %q: give http(s)://host:port", sources.Sanitize(cfg.URL, 80))
	}
	if u.User != nil {
		return nil, fmt.Errorf("--prometheus %q: credentials in the URL are not accepted; use --basic-auth-user and a password file or VTOP_BASIC_AUTH_PASSWORD", sources.Sanitize(u.Redacted(), 80))
	}
	c := &Client{cfg: cfg, name: u.Host, base: u}
	if cfg.Selector != "" {
		ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(cfg.Selector)
		if err != nil {
			return nil, fmt.Errorf("--selector %q: %v", sources.Sanitize(cfg.Selector, 80), err)
		}
		var parts []string
		for _, m := range ms {
			if m.Name == model.MetricNameLabel {
				return nil, fmt.Errorf("--selector %q: name the labels only; vtop picks the metrics", sources.Sanitize(cfg.Selector, 80))
			}
			parts = append(parts, m.String())
		}
		c.sel = strings.Join(parts, ",")
	}
	if cfg.Fetcher == nil {
		if cfg.Fetcher, err = sources.NewFetcher(sources.HTTPConfig{Timeout: cfg.Timeout}); err != nil {
			return nil, err
		}
		c.cfg.Fetcher = cfg.Fetcher
	}
	// The targets' transport waits a scrape's timeout for headers; a server
	// answers a fleet-wide query (or /federate, which sends nothing until it
	// has gathered every series) within the query's. Credentials and the
	// extra headers go to this server only, never along a redirect elsewhere.
	c.http = &http.Client{Transport: &roundTripper{c: c, next: cfg.Fetcher.OriginClient(u, cfg.Headers, cfg.Timeout)}}
	ac, err := api.NewClient(api.Config{Address: strings.TrimSuffix(cfg.URL, "/"), Client: c.http})
	if err != nil {
		return nil, fmt.Errorf("--prometheus %s: %v", c.name, err)
	}
	c.api = v1.NewAPI(ac)
	if err := c.discover(ctx); err != nil {
		return nil, err
	}
	c.federate = tryFederate && c.federateSupported(ctx)
	return c, nil
}

// Federates reports whether refreshes read /federate rather than the
// query API.
func (c *Client) Federates() bool { return c.federate }

// Server names the server, for messages.
func (c *Client) Server() string { return c.name }

// Interval is the scrape interval, detected or given.
func (c *Client) Interval() time.Duration { return c.interval }

// roundTripper logs and bounds each request; the client under it (the
// outbound policy's) adds the credentials and follows redirects.
type roundTripper struct {
	c    *Client
	next *http.Client
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	// What was asked: a POST's form, a GET's query (/federate's selectors),
	// both with the --prometheus URL's own query values hidden; the URL
	// itself is logged with every value hidden.
	form := ""
	if rt.c.cfg.Log != nil {
		switch {
		case req.GetBody != nil:
			if b, err := req.GetBody(); err == nil {
				f, _ := io.ReadAll(io.LimitReader(b, 64<<10))
				form = rt.c.redactForm(string(f))
			}
		case req.URL.RawQuery != "":
			form = rt.c.redactForm(req.URL.RawQuery)
		}
	}
	start := time.Now()
	resp, err := rt.next.Do(req)
	if err != nil {
		// The policy's client quotes the URL, query values and all; the
		// outer client names the request again.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, err
	}
	rt.c.queries.Add(1)
	var done func(int64)
	if l := rt.c.cfg.Log; l != nil {
		done = func(n int64) {
			l.Debug("prometheus request", "method", req.Method, "url", sources.RedactURL(req.URL), "form", form, "status", resp.StatusCode,
				"bytes", n, "seconds", time.Since(start).Seconds())
		}
	}
	resp.Body = sources.LimitBody(resp.Body, rt.c.cfg.MaxBody, &rt.c.bytes, done)
	return resp, nil
}

// endpoint is the URL of an API path on the server, below the path of
// --prometheus and with its query values (a proxy's key) kept, as the API
// client does for the other requests.
func (c *Client) endpoint(p string, q url.Values) string {
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + p
	u.RawPath = ""
	if len(q) > 0 {
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += q.Encode()
	}
	return u.String()
}

// redactForm hides, in a request's form, the values of the query keys the
// --prometheus URL carries (the API client moves them into a POST body): a
// proxy's key must not reach the log.
func (c *Client) redactForm(form string) string {
	v, err := url.ParseQuery(form)
	if err != nil {
		return "(not shown: unreadable form)"
	}
	for k := range c.base.Query() {
		if v.Has(k) {
			v.Set(k, sources.Redacted)
		}
	}
	return v.Encode()
}

// match renders a selector for the given sample names plus the user's
// matchers.
func (c *Client) match(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	s := `{__name__=~"` + strings.Join(q, "|") + `"`
	if c.sel != "" {
		s += "," + c.sel
	}
	return s + "}"
}

// selectFamily is the query for one family's series: the process
// families only where the same target exposes vLLM's running gauge.
func (c *Client) selectFamily(f family) string {
	if f.vllm {
		return c.match(f.names)
	}
	return c.match(f.names) + " and on (" + idBy + ") " + c.match(c.running())
}

// vllmNames is every vLLM sample name the server holds.
func (c *Client) vllmNames() []string {
	var out []string
	for _, f := range c.families {
		if f.vllm {
			out = append(out, f.names...)
		}
	}
	return out
}

// running is the names of the gauge every engine exposes: vLLM's running
// requests, SGLang's, in the spellings present.
func (c *Client) running() []string {
	var out []string
	for _, f := range c.families {
		for _, n := range f.names {
			if sources.RunningGauge(n) {
				out = append(out, n)
			}
		}
	}
	if out == nil {
		return c.families[0].names
	}
	return out
}

// stamped is the names a replica is keyed on: the engines' running gauge
// and the numbers a router serves (a Dynamo frontend has no running
// gauge, and its queue is its workers' pool's).
func (c *Client) stamped() []string {
	out := c.running()
	router := sources.RouterValueNames()
	for _, f := range c.families {
		for _, n := range f.names {
			if slices.Contains(router, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// idBy is idLabels as a PromQL grouping.
const idBy = "cluster,namespace,pod,job,instance"

// query runs an instant query; errors name the server and the query.
func (c *Client) query(ctx context.Context, q string, ts time.Time) (model.Value, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	v, _, _, err := c.api.Query(ctx, q, ts, v1.WithTimeout(c.cfg.Timeout), v1.WithLimit(uint64(c.cfg.MaxSeries)))
	if err != nil {
		return nil, c.queryErr(q, err)
	}
	return v, nil
}

// queryRange runs a range query; errors name the server and the query.
// The answer is decoded in one streaming pass (json-iterator, with the
// fast sample decoders client_golang registers): the API client's own
// path validates the whole body with encoding/json first, a third of a
// backfill's CPU.
func (c *Client) queryRange(ctx context.Context, q string, r v1.Range) (model.Matrix, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	resp, err := c.postRange(ctx, q, r)
	if err != nil {
		return nil, c.queryErr(q, err)
	}
	defer resp.Body.Close()
	var res struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string       `json:"resultType"`
			Result     model.Matrix `json:"result"`
		} `json:"data"`
	}
	if err := jsoniter.ConfigCompatibleWithStandardLibrary.NewDecoder(resp.Body).Decode(&res); err != nil {
		if resp.StatusCode/100 != 2 {
			return nil, answerErr(resp, c.queryErr(q, fmt.Errorf("HTTP %s", resp.Status)))
		}
		return nil, c.queryErr(q, err)
	}
	if res.Status != "success" {
		return nil, answerErr(resp, c.queryErr(q, fmt.Errorf("%s: %s", res.ErrorType, res.Error)))
	}
	if res.Data.ResultType != "matrix" {
		return nil, fmt.Errorf("prometheus %s: query %s: got a %s, not a range", c.name, sources.Sanitize(q, 200), sources.Sanitize(res.Data.ResultType, 20))
	}
	return res.Data.Result, nil
}

// queryRangeText runs a range query whose answer is read as a rangePart
// (the vLLM families of a backfill).
func (c *Client) queryRangeText(ctx context.Context, q string, r v1.Range) (*rangePart, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	resp, err := c.postRange(ctx, q, r)
	if err != nil {
		return nil, c.queryErr(q, err)
	}
	defer resp.Body.Close()
	p, err := readRange(resp.Body, r)
	if err != nil {
		if resp.StatusCode/100 != 2 {
			return nil, answerErr(resp, c.queryErr(q, fmt.Errorf("HTTP %s: %v", resp.Status, err)))
		}
		return nil, c.queryErr(q, err)
	}
	return p, nil
}

// statusError is a query the server refused with an HTTP status: whether
// asking again can help, and when it asked to be asked again.
type statusError struct {
	err    error
	status int
	after  time.Duration // Retry-After, 0 when not given
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

func answerErr(resp *http.Response, err error) error {
	if resp.StatusCode/100 == 2 {
		return err
	}
	return &statusError{err: err, status: resp.StatusCode, after: retryAfter(resp.Header.Get("Retry-After"))}
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// retryWait says whether a failed query is worth asking again, and how
// long to wait first: not a refusal in 4xx other than 429 (the query is
// wrong, or too large), and never longer than maxRetryWait, whatever a
// Retry-After asks. attempt counts from 0.
func retryWait(err error, attempt int) (time.Duration, bool) {
	if errors.Is(err, context.Canceled) {
		return 0, false
	}
	wait := retryBase << attempt
	var se *statusError
	if errors.As(err, &se) {
		if se.status/100 == 4 && se.status != http.StatusTooManyRequests {
			return 0, false
		}
		if se.after > 0 {
			wait = se.after
		}
	}
	return min(wait, maxRetryWait), true
}

// Backfill chunks are asked up to retryAttempts times, waiting retryBase,
// then twice that, between tries (or what the server's Retry-After says,
// up to maxRetryWait): a loaded server during an incident answers 503 or
// 429 now and then.
const (
	retryAttempts = 3
	retryBase     = 500 * time.Millisecond
	maxRetryWait  = 30 * time.Second
)

// postRange sends a range query, bounded as every query is.
func (c *Client) postRange(ctx context.Context, q string, r v1.Range) (*http.Response, error) {
	sec := func(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64) }
	form := url.Values{"query": {q}, "start": {sec(r.Start)}, "end": {sec(r.End)},
		"step": {strconv.FormatFloat(r.Step.Seconds(), 'f', -1, 64)}, "timeout": {c.cfg.Timeout.String()},
		"limit": {strconv.Itoa(c.cfg.MaxSeries)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint("/api/v1/query_range", nil), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.http.Do(req)
}

func (c *Client) queryErr(q string, err error) error {
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		// It quotes the request's URL, query values and all (a token in
		// the server's URL): the server is named already.
		msg = ue.Err.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("no answer within %s", c.cfg.Timeout)
	}
	if strings.Contains(msg, sources.ErrTooLarge.Error()) {
		msg += fmt.Sprintf(" (%d MiB): narrow --selector", c.cfg.MaxBody>>20)
	}
	return fmt.Errorf("prometheus %s: query %s: %s", c.name, sources.Sanitize(q, 200), sources.Sanitize(msg, 200))
}

// discover finds the vLLM families the selector matches, checks the series
// count against the bound, reads the HELP texts and detects the interval.
func (c *Client) discover(ctx context.Context) error {
	now := c.cfg.Clock()
	var pre []string
	for _, p := range sources.EnginePrefixes() {
		pre = append(pre, regexp.QuoteMeta(p))
	}
	// vLLM's families, SGLang's, and their re-exporters' spellings; and
	// the numbers a router (Dynamo's frontend) serves per model, which
	// join its queue to its workers' pool as a scraped frontend's do.
	alts := []string{"(" + strings.Join(pre, "|") + ").+"}
	for _, n := range sources.RouterValueNames() {
		alts = append(alts, regexp.QuoteMeta(n))
	}
	sel := `{__name__=~"` + strings.Join(alts, "|") + `"`
	if c.sel != "" {
		sel += "," + c.sel
	}
	sel += "}"
	// The names come from the index (label values), which costs the server
	// no sample reads however large the fleet.
	qctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	names, _, _, err := c.api.LabelValues(qctx, model.MetricNameLabel, []string{sel}, now.Add(-5*time.Minute), now)
	cancel()
	if err != nil {
		return c.queryErr("label values of __name__ for "+sel, err)
	}
	byFam := map[string]*family{}
	for _, n := range names {
		name := string(n)
		fam, typ, ok := sources.WireFamily(name)
		if !ok {
			continue
		}
		f := byFam[fam]
		if f == nil {
			f = &family{name: fam, typ: typ, vllm: true}
			byFam[fam] = f
		}
		f.names = append(f.names, name)
	}
	if len(byFam) == 0 {
		what := "no vLLM series (vllm:*)"
		if c.sel != "" {
			what += " matching " + c.cfg.Selector
		}
		return fmt.Errorf("prometheus %s: %s in the last 5 minutes", c.name, what)
	}
	// The bound: replicas × the series one vLLM exposes (a few hundred).
	if run := byFam["vllm:num_requests_running"]; run != nil {
		v, err := c.query(ctx, "count("+c.match(run.names)+")", now)
		if err != nil {
			return err
		}
		if vec, _ := v.(model.Vector); len(vec) == 1 && int(vec[0].Value)*seriesPerReplica > c.cfg.MaxSeries {
			return fmt.Errorf("prometheus %s: %d vLLM replicas match, about %d series; more than the limit of %d: narrow --selector",
				c.name, int(vec[0].Value), int(vec[0].Value)*seriesPerReplica, c.cfg.MaxSeries)
		}
	}
	for _, f := range byFam {
		sort.Strings(f.names)
		c.families = append(c.families, *f)
	}
	sort.Slice(c.families, func(i, j int) bool { return c.families[i].name < c.families[j].name })
	// The process families (resident memory for the leak rule, start time
	// for restarts) in one query.
	c.families = append(c.families, family{name: "process", typ: "gauge", names: sources.EndpointNames()})
	// HELP texts tell V0 from V1; a server without the metadata API
	// (some TSDBs) just leaves version detection to the names.
	c.help = map[string]string{}
	if md, err := c.api.Metadata(ctx, "vllm:num_requests_running", "1"); err == nil {
		for name, ms := range md {
			if len(ms) > 0 {
				c.help[name] = ms[0].Help
			}
		}
	}
	// dcgm-exporter's series fill the GPU panel; the selector is for
	// vLLM's series (the exporter runs in another namespace), so the GPUs
	// are narrowed by the join to the replicas instead.
	qctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
	gpuNames, _, _, err := c.api.LabelValues(qctx, model.MetricNameLabel, []string{`{__name__=~"DCGM_.+"}`}, now.Add(-5*time.Minute), now)
	cancel()
	if err != nil {
		return c.queryErr("label values of __name__ for DCGM_*", err)
	}
	for _, n := range gpuNames {
		if dcgm.Known(string(n)) {
			c.dcgm = append(c.dcgm, string(n))
		}
	}
	c.interval = c.cfg.Interval
	if c.interval <= 0 {
		if c.interval, err = c.detectInterval(ctx, now); err != nil {
			return err
		}
	}
	return nil
}

// detectInterval finds the scrape interval from the raw samples of one
// series of the family every vLLM exposes: the median gap between them.
func (c *Client) detectInterval(ctx context.Context, now time.Time) (time.Duration, error) {
	sel := c.match(c.running())
	q := "topk(1, timestamp(" + sel + "))"
	v, err := c.query(ctx, q, now)
	if err != nil {
		return 0, err
	}
	vec, _ := v.(model.Vector)
	if len(vec) == 0 {
		return 0, fmt.Errorf("prometheus %s: no recent sample (query %s)", c.name, q)
	}
	one := strings.TrimSuffix(sel, "}")
	for _, l := range []model.LabelName{"job", "instance", "namespace", "pod"} {
		if val, ok := vec[0].Metric[l]; ok {
			one += fmt.Sprintf(",%s=%q", l, string(val))
		}
	}
	q = one + "}[5m]"
	v, err = c.query(ctx, q, now)
	if err != nil {
		return 0, err
	}
	var gaps []time.Duration
	if m, ok := v.(model.Matrix); ok && len(m) > 0 {
		pts := m[0].Values
		for i := 1; i < len(pts); i++ {
			gaps = append(gaps, pts[i].Timestamp.Time().Sub(pts[i-1].Timestamp.Time()))
		}
	}
	if len(gaps) == 0 {
		// Too young to tell from the data: the server's configured
		// interval where it tells (Prometheus), else its default.
		return c.configuredInterval(ctx), nil
	}
	slices.Sort(gaps)
	iv := gaps[len(gaps)/2]
	if iv > maxInterval {
		// Samples years apart (a hostile or broken server): no interval
		// vtop can follow, and the chunk arithmetic would overflow.
		return 0, fmt.Errorf("prometheus %s: the samples of vLLM's running gauge are %s apart, more than the %s a scrape interval can be", c.name, iv, maxInterval)
	}
	if iv >= time.Second {
		iv = iv.Round(time.Second)
	} else {
		iv = iv.Round(10 * time.Millisecond)
	}
	return max(iv, 100*time.Millisecond), nil
}

// maxInterval bounds the scrape interval vtop follows, detected or given.
const maxInterval = time.Hour

// configuredInterval reads the global scrape_interval from the server's
// configuration (Prometheus' /api/v1/status/config); 1m, Prometheus'
// default, when it has none or does not tell.
func (c *Client) configuredInterval(ctx context.Context) time.Duration {
	const def = time.Minute
	cfg, err := c.api.Config(ctx)
	if err != nil {
		return def
	}
	var y struct {
		Global struct {
			ScrapeInterval string `yaml:"scrape_interval"`
		} `yaml:"global"`
	}
	if yaml.Unmarshal([]byte(cfg.YAML), &y) != nil {
		return def
	}
	d, err := model.ParseDuration(y.Global.ScrapeInterval)
	if err != nil || d <= 0 || time.Duration(d) > maxInterval {
		return def
	}
	return time.Duration(d)
}
