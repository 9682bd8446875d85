package sources

import "time"

// History bounds, shared by everything that sets a window or an interval
// (flags, the config file, a recording's header, a Prometheus server's
// scrape interval) and by the engine that keeps the history.
//
// The engine keeps a fixed number of frames a sub-series (their spacing a
// hundredth of the window), sparkline points and GPU readings, so its
// memory does not grow with the window; the window is bounded so that the
// spacing, the retention (window plus spacing) and the GPU retention (twice
// the window) stay far inside time.Duration and a day of history is one
// ring. A window from anywhere is refused (a flag, a recording) or clamped
// (the engine) past these.
const (
	MaxWindow   = 24 * time.Hour
	MaxInterval = time.Hour
)
