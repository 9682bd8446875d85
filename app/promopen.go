package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/sources"
	"github.com/vtop-dev/vtop/sources/promapi"
)

// openProm opens the server; an error it gives is readable: what failed
// at which address, and when the address is a vLLM server's own port, that.
func openProm(ctx context.Context, cfg promapi.Config) (*promapi.Client, error) {
	cl, err := promapi.Open(ctx, cfg)
	if err != nil {
		return nil, explainProm(ctx, cfg, err)
	}
	return cl, nil
}

// usageErr: the flags are wrong (a URL that is not one, a bad selector):
// retrying cannot help.
func usageErr(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "--prometheus ") && !strings.Contains(msg, "not a Prometheus") && !strings.Contains(msg, "nothing answers") ||
		strings.HasPrefix(msg, "--selector ")
}

// explainProm rewords an error opening the server for the operator.
func explainProm(ctx context.Context, cfg promapi.Config, err error) error {
	msg := err.Error()
	if strings.HasPrefix(msg, "--") {
		return err // already says which flag and why
	}
	base := strings.TrimSuffix(sources.RedactURL(mustParse(cfg.URL)), "/")
	switch {
	case strings.Contains(msg, "connection refused"):
		return errors.New("--prometheus " + base + ": nothing answers there (connection refused): is the server running, and is this its port?")
	case strings.Contains(msg, "404"), strings.Contains(msg, "client_error"), strings.Contains(msg, "bad_response"):
		if isVLLM(ctx, cfg) {
			return errors.New("--prometheus " + base + " is a vLLM server's own /metrics, not a Prometheus API: watch it directly with `vtop " +
				strings.TrimPrefix(strings.TrimPrefix(base, "http://"), "https://") + "` (no --prometheus)")
		}
		return errors.New("--prometheus " + base + ": not a Prometheus API there (its /api/v1 answered " + shortStatus(msg) +
			"): is this the server's address, with its path prefix (e.g. /prometheus) if it has one?")
	}
	return errors.New("--prometheus " + base + ": " + sources.Sanitize(msg, 200))
}

func shortStatus(msg string) string {
	if strings.Contains(msg, "404") {
		return "404 Not Found"
	}
	return "with an error"
}

func mustParse(raw string) *url.URL {
	u, err := url.Parse(raw)
	if err != nil {
		return &url.URL{}
	}
	return u
}

// isVLLM asks the address for /metrics, as vtop asks a target: a vLLM
// engine given to --prometheus answers with its own metrics.
func isVLLM(ctx context.Context, cfg promapi.Config) bool {
	if cfg.Fetcher == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	body, _, err := cfg.Fetcher.Fetch(ctx, strings.TrimSuffix(cfg.URL, "/")+"/metrics", new(bytes.Buffer))
	return err == nil && bytes.Contains(body, []byte("vllm:"))
}

// promRetry is the server as a source when it could not be opened at
// start: vtop opens anyway, says the server fails (its endpoints are
// unseen), and opens it again every retryEvery until it answers; then it
// reads as promapi.Source does, at the interval the server scrapes.
type promRetry struct {
	cfg   promapi.Config
	key   string // the outage's name: promapi.Source's, so its clear ends ours
	first error
	log   *slog.Logger
	every time.Duration
}

func (r *promRetry) Run(ctx context.Context, out chan<- sources.Batch) error {
	err := r.first
	for {
		now := time.Now()
		if err == nil {
			break
		}
		r.log.Warn("prometheus unreachable", "err", err)
		if !sources.Send(ctx, out, sources.Batch{Now: now, Problems: []sources.Problem{{Key: r.key, Text: sources.Sanitize(err.Error(), 200), Feeds: true}}}) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(r.every):
		}
		octx, cancel := context.WithTimeout(ctx, 4*promQueryTimeout)
		var cl *promapi.Client
		cl, err = openProm(octx, r.cfg)
		cancel()
		if err == nil {
			r.log.Info("prometheus answers", "server", cl.Server(), "interval", cl.Interval())
			b := sources.Batch{Now: time.Now(), Interval: cl.Interval(), Problems: []sources.Problem{{Key: r.key}}}
			if !sources.Send(ctx, out, b) {
				return nil
			}
			return promapi.NewSource(cl).Run(ctx, out)
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	return nil
}
