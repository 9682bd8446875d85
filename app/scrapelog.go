package app

import (
	"log/slog"
	"strings"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// logRepeat is how often a target's unchanged error or warnings are logged
// again: a fleet with a broken target would otherwise log the same lines
// every poll (0.4–2 GB/h at 200 endpoints).
const logRepeat = 10 * time.Minute

// scrapeLog logs each target's scrape error or warnings when they change,
// and an unchanged one again only every logRepeat, with how often it recurred.
type scrapeLog struct {
	log  *slog.Logger
	now  func() time.Time
	last map[string]*logged // by target name
}

type logged struct {
	msg     string
	at      time.Time
	repeats int
}

func newScrapeLog(l *slog.Logger, now func() time.Time) *scrapeLog {
	return &scrapeLog{log: l, now: now, last: map[string]*logged{}}
}

func (sl *scrapeLog) note(s sources.Scrape) {
	var msg string
	switch {
	case s.Err != nil:
		msg = "scrape failed: " + s.Err.Error()
	case s.Data != nil && len(s.Data.Warnings) > 0:
		msg = "scrape warnings: " + strings.Join(s.Data.Warnings, "; ")
	}
	l := sl.last[s.Target]
	if msg == "" {
		if l != nil && l.msg != "" {
			sl.log.Info("scrape ok again", "target", s.Target)
			delete(sl.last, s.Target)
		}
		return
	}
	now := sl.now()
	if l != nil && l.msg == msg && now.Sub(l.at) < logRepeat {
		l.repeats++
		return
	}
	if l != nil && l.msg == msg {
		sl.log.Debug(msg, "target", s.Target, "repeated", l.repeats)
	} else {
		sl.log.Debug(msg, "target", s.Target)
	}
	sl.last[s.Target] = &logged{msg: msg, at: now}
}
