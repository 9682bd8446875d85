package app

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// TestScrapeLogRateLimited: a target that fails the same way every poll is
// logged once per logRepeat, not once per poll; a change is logged at once.
func TestScrapeLogRateLimited(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sl := newScrapeLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), func() time.Time { return now })
	fail := sources.Scrape{Target: "t", Err: errors.New("connection refused")}
	for i := 0; i < 3600; i++ { // an hour at 1 s
		sl.note(fail)
		now = now.Add(time.Second)
	}
	if n := strings.Count(buf.String(), "connection refused"); n != 6 {
		t.Errorf("an hour of one error logged %d times, want 6 (every %s):\n%s", n, logRepeat, buf.String())
	}
	if !strings.Contains(buf.String(), "repeated=599") {
		t.Errorf("the repeat count is not logged:\n%s", buf.String())
	}
	buf.Reset()
	sl.note(sources.Scrape{Target: "t", Err: errors.New("timed out after 3s")})
	sl.note(sources.Scrape{Target: "t", Data: &sources.Snapshot{}})
	if !strings.Contains(buf.String(), "timed out") || !strings.Contains(buf.String(), "scrape ok again") {
		t.Errorf("changes not logged:\n%s", buf.String())
	}
}
