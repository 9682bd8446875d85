package sources

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOwnConnection: a loopback target's scrapes reuse one connection; one
// the server closed while idle is redialled without an error; a server that
// closes after each answer, or an answer not read to its end, costs a new
// connection, never a failed or mixed-up scrape.
func TestOwnConnection(t *testing.T) {
	dump := v010Dump(t)
	var conns atomic.Int32
	var mu sync.Mutex
	mode := "" // "close": answer with Connection: close; "500": an error with a long body
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		m := mode
		mu.Unlock()
		w.Header().Set("Content-Type", textCT)
		switch m {
		case "close":
			w.Header().Set("Connection", "close")
		case "500":
			w.WriteHeader(http.StatusInternalServerError)
		}
		w.Write(dump)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	f := testFetcher(t, 0)
	st := FetchState{Buf: new(bytes.Buffer), Plain: true}
	defer st.Close()
	scrape := func(what string) {
		t.Helper()
		body, _, err := f.FetchInto(context.Background(), srv.URL+"/metrics", &st)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !bytes.Equal(body, dump) {
			t.Fatalf("%s: body of %d bytes, want the %d of the dump", what, len(body), len(dump))
		}
		f.Release(&st)
	}
	for range 3 {
		scrape("kept connection")
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("3 scrapes took %d connections, want 1", n)
	}
	srv.CloseClientConnections() // as a keep-alive timeout or a restart would
	scrape("after the server closed the idle connection")
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections after a redial, want 2", n)
	}
	mu.Lock()
	mode = "close"
	mu.Unlock()
	scrape("Connection: close") // over the kept connection, then dropped
	scrape("Connection: close again")
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections after two answers with Connection: close, want 3", n)
	}
	if st.conn != nil {
		t.Error("a connection the server closes is kept")
	}
	// An error's body is read only in part: the rest must not be taken
	// for the next answer.
	mu.Lock()
	mode = "500"
	mu.Unlock()
	if _, _, err := f.FetchInto(context.Background(), srv.URL+"/metrics", &st); err == nil {
		t.Fatal("HTTP 500 read as a scrape")
	}
	f.Release(&st)
	mu.Lock()
	mode = ""
	mu.Unlock()
	scrape("after an error's body read in part")
}

// TestOwnConnectionEndsWithThePoller: cancelling the poller's context ends
// a scrape hung on the target's own connection at once, not at its timeout
// (five minutes here: the test would time out).
func TestOwnConnectionEndsWithThePoller(t *testing.T) {
	got := make(chan struct{})
	release := make(chan struct{})
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		close(got)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	f, err := NewFetcher(HTTPConfig{Timeout: 5 * 60e9})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-got; cancel() }()
	st := FetchState{Buf: new(bytes.Buffer), Plain: true}
	defer st.Close()
	if _, _, err := f.FetchInto(ctx, url, &st); err == nil {
		t.Fatal("a cancelled scrape succeeded")
	}
	if st.conn != nil {
		t.Error("the connection of a cancelled scrape is kept")
	}
}

// TestEndlessResponseHeaders: a target that sends header lines without end
// fails on the header bound, through the client and over a loopback
// target's own connection, not at the timeout after holding all it sent
// (net/http's ReadResponse alone has no bound).
func TestEndlessResponseHeaders(t *testing.T) {
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
				c.Read(make([]byte, 4096)) // the request
				line := []byte("X-Junk: " + strings.Repeat("a", 1000) + "\r\n")
				c.Write([]byte("HTTP/1.1 200 OK\r\n"))
				for range 16 << 10 { // 16 MiB of headers, then silence
					if _, err := c.Write(line); err != nil {
						return
					}
				}
				c.Read(make([]byte, 1)) // until the client gives up
			}()
		}
	}()
	f := testFetcher(t, 5*time.Minute)
	for _, own := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		st := FetchState{Buf: new(bytes.Buffer), Plain: own}
		_, _, err := f.FetchInto(ctx, "http://"+ln.Addr().String()+"/metrics", &st)
		cancel()
		st.Close()
		f.Release(&st)
		if err == nil || !strings.Contains(err.Error(), "header") {
			t.Errorf("own connection %v: error %v, want one about the headers' size", own, err)
		}
	}
}
