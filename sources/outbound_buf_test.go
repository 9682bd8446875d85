package sources

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

// An origin's client (a Prometheus server's) reads its large answers in
// large reads; the scrape connections, one per target, keep the small
// default buffer.
func TestOriginClientReadsInLargeReads(t *testing.T) {
	f, err := NewFetcher(HTTPConfig{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://127.0.0.1:9090")
	for _, hdr := range []time.Duration{0, time.Second} {
		c := f.OriginClient(u, nil, hdr)
		tr := c.Transport.(*originTransport).next.(*http.Transport)
		if tr.ReadBufferSize < 64<<10 {
			t.Errorf("header timeout %s: the origin's read buffer is %d bytes, want at least 64 KiB", hdr, tr.ReadBufferSize)
		}
	}
	if n := f.client.Transport.(*http.Transport).ReadBufferSize; n != 0 {
		t.Errorf("the scrape transport's read buffer is %d bytes, want the default", n)
	}
}
