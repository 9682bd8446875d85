package sources

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// ownConn is one loopback target's own keep-alive HTTP/1.1 connection. The
// polling goroutine writes the request and reads the answer itself, with
// net/http's Request.Write and ReadResponse, instead of handing each scrape
// to the Transport's write loop and back from its read loop: two goroutine
// hand-offs and their wake-ups per scrape, about a fifth of vtop's CPU at
// 200 endpoints. Only plain http to a loopback target takes it (no proxy, no
// TLS, nothing to negotiate); a target that answers with a redirect or an
// informational status goes through the client from then on.
type ownConn struct {
	c      net.Conn
	lr     headerLimit   // under br: bounds an answer's head
	br     *bufio.Reader // while a scrape reads the answer; nil between scrapes (see ownReaders)
	reused bool          // a request went over it already
}

// ownReaders are the answers' read buffers, shared: a kept connection holds
// nothing between its scrapes (one is only kept with nothing buffered), so
// only scrapes in flight hold one, not every loopback target (4 MB at 1,000).
var ownReaders sync.Pool

// reader takes a read buffer for the scrape about to read an answer.
func (oc *ownConn) reader() *bufio.Reader {
	if oc.br == nil {
		br, _ := ownReaders.Get().(*bufio.Reader)
		if br == nil {
			br = bufio.NewReaderSize(&oc.lr, 4<<10)
		} else {
			br.Reset(&oc.lr)
		}
		oc.br = br
	}
	return oc.br
}

// putReader gives the read buffer back once the answer is done with it.
func (oc *ownConn) putReader() {
	if oc.br != nil {
		oc.br.Reset(nil) // holds no connection alive
		ownReaders.Put(oc.br)
		oc.br = nil
	}
}

// ownRequest is the target's GET, built once, and rendered once by
// Request.Write into st.head; rendered again only when the credentials
// change (a rotated bearer token file).
func (f *Fetcher) ownRequest(rawURL string, st *FetchState) (*http.Request, error) {
	if st.req == nil || st.reqURL != rawURL {
		req, err := http.NewRequest(http.MethodGet, rawURL, nil)
		if err != nil {
			return nil, err
		}
		req.Header = f.header(true)
		st.req, st.reqURL, st.head = req, rawURL, nil
	}
	req := st.req
	if err := f.auth(req); err != nil {
		return nil, err
	}
	if a := req.Header.Get("Authorization"); st.head == nil || a != st.headAuth {
		var b bytes.Buffer
		if err := req.Write(&b); err != nil {
			return nil, err
		}
		st.head, st.headAuth = b.Bytes(), a
	}
	return req, nil
}

// closeConn drops the target's own connection, if it has one.
func (st *FetchState) closeConn() {
	if st.conn != nil {
		st.conn.c.Close()
		st.conn.putReader()
		st.conn = nil
	}
}

// Close releases what the target keeps between scrapes: its connection.
func (st *FetchState) Close() { st.closeConn() }

// roundTrip sends req over the target's own connection, dialling one when it
// has none. A kept connection the server closed while idle fails before any
// answer: that is retried once on a new one, as the Transport does.
func (f *Fetcher) roundTrip(ctx context.Context, req *http.Request, st *FetchState) (*http.Response, error) {
	deadline := time.Now().Add(f.cfg.Timeout) // the whole scrape's, redial included
	for {
		if st.conn == nil {
			dctx, cancel := context.WithDeadline(ctx, deadline)
			c, err := f.dialer.DialContext(dctx, "tcp", canonicalAddr(req.URL))
			cancel()
			if err != nil {
				return nil, err
			}
			st.conn = &ownConn{c: c, lr: headerLimit{r: c, n: -1}}
		}
		reused := st.conn.reused
		resp, silent, err := f.exchange(ctx, deadline, req, st, st.conn)
		if err == nil {
			return resp, nil
		}
		st.closeConn()
		if !reused || !silent || ctx.Err() != nil || isTimeout(err) {
			return nil, err
		}
	}
}

// exchange writes req and reads the answer's head; the body is read from
// the connection as the caller reads it (see ownBody). silent says the
// server sent nothing at all before the failure.
func (f *Fetcher) exchange(ctx context.Context, deadline time.Time, req *http.Request, st *FetchState, oc *ownConn) (_ *http.Response, silent bool, _ error) {
	oc.reused = true
	if err := oc.c.SetDeadline(deadline); err != nil {
		return nil, true, err
	}
	// Ending the poller ends a scrape in flight at once, not at its timeout.
	stop := context.AfterFunc(ctx, func() { oc.c.SetDeadline(time.Unix(1, 0)) })
	if _, err := oc.c.Write(st.head); err != nil {
		stop()
		return nil, true, err
	}
	if _, err := oc.reader().Peek(1); err != nil {
		stop()
		return nil, true, err
	}
	oc.lr.n = maxHeaderBytes - int64(oc.br.Buffered())
	resp, err := http.ReadResponse(oc.br, req)
	if err != nil {
		stop()
		if oc.lr.n == 0 {
			err = errHeaderSize
		}
		return nil, false, err
	}
	oc.lr.n = -1
	if resp.StatusCode < 200 || (resp.StatusCode >= 300 && resp.StatusCode < 400) {
		// Redirects (followed under checkRedirect) and 1xx: the client's.
		stop()
		st.closeConn()
		st.viaClient = true
		rctx, cancel := context.WithDeadline(ctx, deadline)
		resp, err = f.do(req.WithContext(rctx), cancel)
		return resp, false, err
	}
	resp.Body = &ownBody{body: resp.Body, st: st, oc: oc, keep: !resp.Close, stop: stop}
	return resp, false, nil
}

// ownBody keeps the connection for the next scrape only when the body was
// read to its end and the server said nothing against it; otherwise the
// connection is closed, never drained (an endless body must cost nothing
// more once vtop stops reading it).
type ownBody struct {
	body io.ReadCloser
	st   *FetchState
	oc   *ownConn
	keep bool
	eof  bool
	stop func() bool
}

func (b *ownBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	return n, err
}

func (b *ownBody) Close() error {
	stopped := b.stop()
	if b.eof && b.keep && stopped && b.oc.br.Buffered() == 0 && b.st.conn == b.oc {
		err := b.body.Close() // at EOF: nothing left to drain
		b.oc.putReader()
		return err
	}
	if b.st.conn == b.oc {
		b.st.closeConn()
	}
	return nil
}

// maxHeaderBytes bounds an answer's status line and headers, on both paths
// (the Transport's own default is 10 MB): a metrics endpoint sends a few
// hundred bytes, and http.ReadResponse alone would read headers without end.
const maxHeaderBytes = 1 << 20

var errHeaderSize = errors.New("response headers larger than 1 MiB")

// headerLimit lets n more bytes through while an answer's head is read (n
// negative: no limit, for the body, which --max-body bounds).
type headerLimit struct {
	r io.Reader
	n int64
}

func (l *headerLimit) Read(p []byte) (int, error) {
	if l.n == 0 {
		return 0, io.EOF
	}
	if l.n > 0 && int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	if l.n > 0 {
		l.n -= int64(n)
	}
	return n, err
}

// canonicalAddr is u's host:port, with the scheme's port when u names none.
func canonicalAddr(u *url.URL) string {
	return net.JoinHostPort(u.Hostname(), portOf(u))
}
