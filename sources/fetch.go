package sources

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Default limits of one scrape.
const (
	DefaultTimeout  = 3 * time.Second
	DefaultMaxBody  = 16 << 20 // after decompression; a full vLLM scrape is ~60 KiB
	acceptHeaderVal = "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)

// The Accept header asks for the classic text format only: prometheus_client
// (vLLM) answers OpenMetrics whenever a client lists it at all, and serves the
// same series, _created included, in the text format, whose parser costs
// about half as much per scrape. The Content-Type of the answer still picks
// the parser, so an OpenMetrics-only target is read too.

// HTTPConfig is how vtop talks to targets.
type HTTPConfig struct {
	Timeout            time.Duration
	MaxBody            int64
	BearerTokenFile    string // read at each scrape, so a rotated token is picked up
	BearerToken        string // from the environment only, never a flag
	BasicUser          string
	BasicPassword      string // from a file or the environment
	CAFile             string
	CertFile, KeyFile  string
	InsecureSkipVerify bool
	UserAgent          string
	// Resolver overrides name resolution (tests point it at loopback so a
	// DNS failure needs no network); nil uses the system resolver.
	Resolver *net.Resolver
}

// Fetcher performs bounded HTTP GETs of /metrics.
type Fetcher struct {
	cfg        HTTPConfig
	client     *http.Client
	dialer     *net.Dialer // the client's, for loopback targets' own connections (ownconn.go)
	timeoutHdr string
	budget     *bodyBudget // shared by every target this fetcher reads
}

// NewFetcher builds the HTTP client once (TLS material is loaded here, so a
// bad CA file is an error at start-up, not a silent failure per scrape).
func NewFetcher(cfg HTTPConfig) (*Fetcher, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxBody > MaxBodyLimit {
		return nil, fmt.Errorf("max body %s is more than the %s limit", byteSize(cfg.MaxBody), byteSize(MaxBodyLimit))
	}
	tlsCfg := &tls.Config{InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // only when asked
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s: no PEM certificates", cfg.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	if cfg.CertFile != "" || cfg.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %v", err)
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second, Resolver: cfg.Resolver}
	tr := &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            dialer.DialContext,
		TLSClientConfig:        tlsCfg,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxResponseHeaderBytes: maxHeaderBytes,
		DisableCompression:     true, // we ask for gzip ourselves and bound the inflated size
		// A scrape request is a few hundred bytes (a long token is
		// written through): the default 4 KiB buffer per kept
		// connection is 3 MB more at 1,000 targets.
		WriteBufferSize: 1 << 10,
	}
	// The per-request context carries the deadline (connect, headers and a
	// slow-drip body alike), so the client itself has no Timeout.
	return &Fetcher{cfg: cfg, client: &http.Client{Transport: tr, CheckRedirect: checkRedirect}, dialer: dialer,
		timeoutHdr: strconv.FormatFloat(cfg.Timeout.Seconds(), 'g', -1, 64),
		budget:     &bodyBudget{limit: BodyBudget(cfg.MaxBody)}}, nil
}

// MaxBodyLimit is the largest --max-body accepted: beyond it a body is not
// metrics, and the limit arithmetic must not overflow.
const MaxBodyLimit = 1 << 30

// FetchState is what one target reuses from scrape to scrape: the body
// buffer, so a steady target allocates none, and a loopback target's own
// connection (Close it when the target is done).
type FetchState struct {
	Buf      *bytes.Buffer
	Redirect string // where the last scrape was redirected to (shown, secrets redacted); "" when it was not
	// Plain asks for an uncompressed body: on loopback there is no network
	// to save, and inflating costs both ends CPU on every scrape.
	Plain     bool
	held      int64    // bytes of the large-body budget this scrape holds (see Release)
	conn      *ownConn // a plain target's own connection, nil between a failure and the next scrape
	viaClient bool     // the target redirected (or is https): its scrapes go through the client
	// req is a plain target's GET for reqURL, and head that request as
	// Request.Write renders it with the credentials in headAuth.
	req      *http.Request
	reqURL   string
	head     []byte
	headAuth string
}

// gzipReaders are shared by all targets: only scrapes inflating a body
// hold one (~45 KiB of inflate state each), not every remote target.
var gzipReaders sync.Pool

// Fetch GETs the target into buf (reused between scrapes) and returns the
// body and its Content-Type. Every failure is one sanitized line.
func (f *Fetcher) Fetch(ctx context.Context, url string, buf *bytes.Buffer) ([]byte, string, error) {
	st := &FetchState{Buf: buf}
	defer f.Release(st) // the caller keeps buf: only scrapes in flight count
	return f.FetchInto(ctx, url, st)
}

// FetchInto is Fetch with the target's reusable state.
func (f *Fetcher) FetchInto(ctx context.Context, rawURL string, st *FetchState) ([]byte, string, error) {
	st.Redirect = ""
	resp, err := f.send(ctx, rawURL, st)
	if err != nil {
		// The client's error names the request that failed: after a
		// redirect, that is not the target's own URL.
		var ue *url.Error
		if errors.As(err, &ue) && ue.URL != rawURL {
			st.Redirect = ShowURL(ue.URL)
		}
		err = describeNetErr(err, f.cfg.Timeout)
		if st.Redirect != "" {
			err = fmt.Errorf("%w after a redirect to %s", err, st.Redirect)
		}
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.Request != nil && resp.Request != st.req && resp.Request.URL.String() != rawURL {
		st.Redirect = RedactURL(resp.Request.URL)
	}
	ct := resp.Header.Get("Content-Type")
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		msg := fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			msg += " (check --bearer-token-file / basic auth)"
		case http.StatusNotFound:
			msg += " (is the path /metrics, and is this the vLLM API server?)"
		}
		if st.Redirect != "" {
			msg += " after a redirect to " + st.Redirect
		}
		return nil, ct, errors.New(msg)
	}
	var r io.Reader = resp.Body
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		gz, _ := gzipReaders.Get().(*gzip.Reader)
		if gz == nil {
			gz, err = gzip.NewReader(resp.Body)
		} else {
			err = gz.Reset(resp.Body)
		}
		if err != nil {
			return nil, ct, fmt.Errorf("bad gzip body: %v", Sanitize(err.Error(), 80))
		}
		defer gzipReaders.Put(gz)
		r = gz
	}
	st.Buf.Reset()
	n, err := f.readBody(r, st, f.cfg.MaxBody+1)
	if err != nil {
		if errors.Is(err, errBodyBudget) {
			return nil, ct, err
		}
		if ctx.Err() != nil || isTimeout(err) {
			return nil, ct, fmt.Errorf("timed out after %s reading the body (%d bytes so far)", f.cfg.Timeout, n)
		}
		return nil, ct, fmt.Errorf("reading body: %s", Sanitize(err.Error(), 120))
	}
	if n > f.cfg.MaxBody {
		return nil, ct, fmt.Errorf("body larger than %s after decompression (limit --max-body)", byteSize(f.cfg.MaxBody))
	}
	body := st.Buf.Bytes()
	if looksHTML(ct, body) {
		return nil, ct, errors.New("served an HTML page, not metrics (wrong port or path? vLLM serves /metrics on its API port)")
	}
	return body, ct, nil
}

// send GETs rawURL over a loopback target's own connection (ownconn.go),
// else through the client; the timeout bounds either, and closing the
// answer's body ends the request.
func (f *Fetcher) send(ctx context.Context, rawURL string, st *FetchState) (*http.Response, error) {
	if st.Plain && !st.viaClient {
		req, err := f.ownRequest(rawURL, st)
		if err != nil {
			return nil, err
		}
		if req.URL.Scheme == "http" {
			return f.roundTrip(ctx, req, st)
		}
		st.viaClient = true // TLS: the client's
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header = f.header(st.Plain)
	if err := f.auth(req); err != nil {
		cancel()
		return nil, err
	}
	return f.do(req, cancel)
}

// do sends req through the client; cancel ends its context once the
// answer's body is closed (or at once on failure).
func (f *Fetcher) do(req *http.Request, cancel context.CancelFunc) (*http.Response, error) {
	resp, err := f.client.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelBody{resp.Body, cancel}
	return resp, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// header is a scrape's request header, before credentials.
func (f *Fetcher) header(plain bool) http.Header {
	enc := "gzip"
	if plain {
		enc = "identity"
	}
	return http.Header{
		"Accept":                              {acceptHeaderVal},
		"Accept-Encoding":                     {enc},
		"User-Agent":                          {f.userAgent()},
		"X-Prometheus-Scrape-Timeout-Seconds": {f.timeoutHdr},
	}
}

func (f *Fetcher) userAgent() string {
	if f.cfg.UserAgent == "" {
		return "vtop"
	}
	return f.cfg.UserAgent
}

func (f *Fetcher) auth(req *http.Request) error {
	switch {
	case f.cfg.BearerTokenFile != "":
		b, err := os.ReadFile(f.cfg.BearerTokenFile)
		if err != nil {
			return fmt.Errorf("bearer token file: %v", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(b)))
	case f.cfg.BearerToken != "":
		req.Header.Set("Authorization", "Bearer "+f.cfg.BearerToken)
	case f.cfg.BasicUser != "":
		req.SetBasicAuth(f.cfg.BasicUser, f.cfg.BasicPassword)
	}
	return nil
}

func looksHTML(ct string, body []byte) bool {
	if strings.HasPrefix(strings.ToLower(ct), "text/html") {
		return true
	}
	head := bytes.TrimSpace(body[:min(len(body), 256)])
	if len(head) == 0 || head[0] != '<' {
		return false // metrics, not markup: no lower-cased copy per scrape
	}
	head = bytes.ToLower(head)
	return bytes.HasPrefix(head, []byte("<!doctype html")) || bytes.HasPrefix(head, []byte("<html"))
}

// describeNetErr turns a transport error into one line an operator can act on.
func describeNetErr(err error, timeout time.Duration) error {
	var dns *net.DNSError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Errorf("timed out after %s", timeout)
	case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EADDRNOTAVAIL):
		// Linux's connect says EAGAIN, not a timeout, when this host has no
		// free local port left: the fault is here, not at the target.
		return errors.New("could not connect: no free local port on this host (too many connections in TIME_WAIT?)")
	case errors.As(err, &dns):
		return fmt.Errorf("DNS lookup of %s failed: %s", Sanitize(dns.Name, 60), Sanitize(dns.Err, 60))
	case errors.Is(err, syscall.ECONNREFUSED):
		return errors.New("connection refused (is vLLM running on this port?)")
	case errors.Is(err, syscall.ECONNRESET):
		return errors.New("connection reset by peer")
	}
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return fmt.Errorf("TLS certificate not trusted (use --ca-file, or --insecure-skip-verify): %s", Sanitize(cert.Err.Error(), 80))
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // drop `Get "http://…":`, the target is named already
	}
	return errors.New(Sanitize(strings.TrimPrefix(err.Error(), "net/http: "), 160))
}

// isTimeout says a deadline passed. A syscall.Errno reports EAGAIN as a
// timeout too, which an immediate connect failure is not ("timed out after
// 3s" after 0.2 ms, seen under CI load).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && !errors.Is(err, syscall.EAGAIN)
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
