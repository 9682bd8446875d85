package sources

import (
	"net/http"
	"time"
)

// Client returns the fetcher's HTTP client (TLS material loaded once) for
// other HTTP sources, such as a Prometheus server's API.
func (f *Fetcher) Client() *http.Client { return f.client }

// Authorize sets the request's credentials as a scrape's (the bearer token
// file is re-read each time, so rotation works).
func (f *Fetcher) Authorize(req *http.Request) error { return f.auth(req) }

// Timeout is the bound on one request.
func (f *Fetcher) Timeout() time.Duration { return f.cfg.Timeout }
