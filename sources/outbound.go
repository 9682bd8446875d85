package sources

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// The outbound HTTP policy: every client vtop has (targets, the Prometheus
// API, dcgm-exporter) sends its requests under these rules, so a new surface
// cannot forget one:
//   - credentials (the bearer token, basic auth, every extra --header) go
//     only to the origin they were given for: a redirect to another host or
//     port, or from https to plain http, drops them (checkRedirect, and
//     originTransport for a client that adds them per request);
//   - at most maxRedirects hops;
//   - an answer's head is bounded (maxHeaderBytes) and its body by the
//     client's limit (LimitBody);
//   - a request is bounded in time by its context;
//   - a URL is shown with its query values redacted (RedactURL).

// maxRedirects is how many hops a request may follow.
const maxRedirects = 3

// sensitiveHeaders are dropped from a request that leaves the first
// request's origin, besides the extra headers a client was given.
var sensitiveHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie"}

// checkRedirect follows at most maxRedirects redirects, and drops the
// credentials as soon as a hop leaves the first request's origin (scheme,
// host and port): a token must never go out over http after https, or to
// another server. Go's client only strips them for another domain.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return errors.New("too many redirects")
	}
	first := via[0].URL
	for _, r := range append(via[1:len(via):len(via)], req) {
		if !sameOrigin(first, r.URL) {
			for _, h := range sensitiveHeaders {
				req.Header.Del(h)
			}
			break
		}
	}
	return nil
}

// OriginClient is a client for one server at origin (an API, an exporter):
// the fetcher's TLS material and the policy above, with the fetcher's
// credentials and the extra headers added to a request only when it goes to
// that origin, whatever redirect led there. headerTimeout bounds the wait
// for an answer's head (0: the fetcher's timeout).
func (f *Fetcher) OriginClient(origin *url.URL, extra map[string]string, headerTimeout time.Duration) *http.Client {
	next := f.client.Transport
	if t, ok := next.(*http.Transport); ok {
		t = t.Clone()
		if headerTimeout > 0 {
			t.ResponseHeaderTimeout = headerTimeout
		}
		// An origin answers large bodies over a few connections: a
		// 2,000-replica /federate refresh (~110 MB, in ~4 KiB chunks)
		// took 28,547 read calls with the default 4 KiB buffer, 8 % of
		// its CPU; 1,480 with this one.
		t.ReadBufferSize = 256 << 10
		if dial := t.DialContext; dial != nil {
			t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return newPacedConn(c), nil
			}
		}
		next = t
	}
	return &http.Client{Transport: &originTransport{f: f, origin: origin, extra: extra, next: next}, CheckRedirect: checkRedirect}
}

// originTransport adds the credentials to the requests for its origin, and
// takes every credential (its own extra headers included) off the others:
// the client calls it once per hop, so a redirect elsewhere gets none.
type originTransport struct {
	f      *Fetcher
	origin *url.URL
	extra  map[string]string
	next   http.RoundTripper
}

func (t *originTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if sameOrigin(t.origin, req.URL) {
		if err := t.f.auth(req); err != nil {
			return nil, err
		}
		for k, v := range t.extra {
			req.Header.Set(k, v)
		}
	} else {
		for _, h := range sensitiveHeaders {
			req.Header.Del(h)
		}
		for k := range t.extra {
			req.Header.Del(k)
		}
	}
	req.Header.Set("User-Agent", t.f.userAgent())
	return t.next.RoundTrip(req)
}

// ErrTooLarge is an answer past its client's size limit.
var ErrTooLarge = errors.New("response larger than the limit")

// LimitBody bounds an answer's body at max bytes (a read past it fails
// with ErrTooLarge), counts what was read into n (may be nil), and calls
// done, when set, at Close.
func LimitBody(r io.ReadCloser, max int64, n *atomic.Int64, done func(read int64)) io.ReadCloser {
	return &limitBody{r: r, max: max, left: max, n: n, done: done}
}

type limitBody struct {
	r         io.ReadCloser
	max, left int64
	n         *atomic.Int64
	done      func(int64)
}

func (l *limitBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.n != nil {
		l.n.Add(int64(n))
	}
	return n, err
}

func (l *limitBody) Close() error {
	if l.done != nil {
		l.done(l.max - l.left)
		l.done = nil
	}
	return l.r.Close()
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && portOf(a) == portOf(b)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}
