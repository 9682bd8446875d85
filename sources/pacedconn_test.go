package sources

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// scriptedConn answers each Read with the next of its sizes (at most what
// the caller asked for), then io.EOF.
type scriptedConn struct {
	net.Conn
	sizes []int
}

func (c *scriptedConn) Read(b []byte) (int, error) {
	if len(c.sizes) == 0 {
		return 0, io.EOF
	}
	n := min(c.sizes[0], len(b))
	c.sizes = c.sizes[1:]
	return n, nil
}

// TestPacedConnPauses: a run of a MiB whose reads find little waiting is
// paced (a pause before each read after a short one) while the pauses
// gather more than a small answer; a read after a pause that finds less
// ends the run, and the small reads after it are not paced.
func TestPacedConnPauses(t *testing.T) {
	var sizes []int
	for range 35 { // 1,050 KiB in short reads: the run is paced from here
		sizes = append(sizes, 30<<10)
	}
	sizes = append(sizes,
		200<<10, // after a pause: it gathered enough, the run goes on
		10<<10,  // short: another pause
		8<<10,   // after a pause, short but more than a small answer: another pause
		100,     // after a pause, little: the run ends
	)
	for range 10 { // the next answers, small: no pause
		sizes = append(sizes, 300)
	}
	var pauses []int // the read each pause came before
	inner := &scriptedConn{sizes: sizes}
	c := &pacedConn{Conn: inner, sleep: func(d time.Duration) {
		if d != pacedPause {
			t.Errorf("a pause of %v", d)
		}
		pauses = append(pauses, len(sizes)-len(inner.sizes))
	}}
	buf := make([]byte, 256<<10)
	for {
		if _, err := c.Read(buf); err != nil {
			break
		}
	}
	if want := []int{35, 37, 38}; fmt.Sprint(pauses) != fmt.Sprint(want) {
		t.Errorf("paused before reads %v, want %v", pauses, want)
	}
	// A read into a small buffer is never paused: it could take no more.
	c = &pacedConn{Conn: &scriptedConn{sizes: []int{1 << 20, 100, 100}}, sleep: func(time.Duration) { t.Error("paused a small read") }}
	for range 2 {
		c.Read(make([]byte, 1<<10))
	}
}

// countingConn counts the reads that reach the connection.
type countingConn struct {
	net.Conn
	reads *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(b)
}

// TestOriginClientPacesLargeAnswers: an origin's answer that arrives a
// few KiB at a time is read whole, byte for byte, in fewer reads than the
// same answer read by the same transport unpaced, in the same seconds (a
// bound on the paced count alone failed 5 times in 20 beside a CPU hog:
// a loaded machine wakes the writer late, so fewer bytes wait at each
// pause); a small answer on the same connection after it is not delayed.
func TestOriginClientPacesLargeAnswers(t *testing.T) {
	const writes, piece = 2000, 2 << 10
	body := make([]byte, writes*piece)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					if req.URL.Path == "/small" {
						fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
						continue
					}
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(body))
					for i := 0; i < len(body); i += piece {
						if _, err := c.Write(body[i : i+piece]); err != nil {
							return
						}
						time.Sleep(20 * time.Microsecond)
					}
				}
			}()
		}
	}()
	f := testFetcher(t, time.Minute)
	tr := f.client.Transport.(*http.Transport)
	var reads atomic.Int64
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, &reads}, nil
	}
	origin, _ := url.Parse("http://" + ln.Addr().String())
	cl := f.OriginClient(origin, nil, 0)
	// The same transport, its buffer as large, without the pacing.
	plainTr := tr.Clone()
	plainTr.ReadBufferSize = 256 << 10
	plain := &http.Client{Transport: plainTr}
	get := func(c *http.Client) int64 {
		before := reads.Load()
		resp, err := c.Get(origin.String() + "/large")
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("read %d bytes (%v), want the %d sent", len(got), err, len(body))
		}
		return reads.Load() - before
	}
	var paced, unpaced int64
	for range 2 {
		paced += get(cl)
		unpaced += get(plain)
	}
	t.Logf("%d reads paced, %d unpaced, for 2 × %d writes", paced, unpaced, writes)
	if paced*4 > unpaced*3 {
		t.Errorf("%d reads paced against %d unpaced: want at most three quarters", paced, unpaced)
	}
	start := time.Now()
	resp, err := cl.Get(origin.String() + "/small")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("the small answer after it took %v", d)
	}
}
