package main

import (
	"fmt"
	"math"
	"time"

	"github.com/vtop-dev/vtop/sources"
)

// Bounds of the numeric options. Each is far beyond any sensible setting and
// well inside what the arithmetic downstream (timers, buffers, windows ×
// frames) can hold without overflowing.
const (
	minInterval    = 100 * time.Millisecond
	maxInterval    = sources.MaxInterval
	maxWindow      = sources.MaxWindow // the history vtop keeps
	maxTimeout     = 10 * time.Minute
	maxSamplesOpt  = 10_000_000
	maxParallelOpt = 100_000
)

// validateNumbers checks every numeric option against its bounds, so a
// typo like --interval 2562047h is an error naming the flag, not a 146-year
// wait or an overflowed size.
func (o *options) validateNumbers() error {
	switch {
	case o.interval < minInterval:
		return fmt.Errorf("--interval must be at least %s", minInterval)
	case o.interval > maxInterval:
		return fmt.Errorf("--interval %s is longer than %s", o.interval, maxInterval)
	case o.window < 2*o.interval:
		return fmt.Errorf("--window (%s) must cover at least two polls (--interval %s)", o.window, o.interval)
	case o.window > maxWindow:
		return fmt.Errorf("--window %s is longer than %s, the history vtop keeps", o.window, maxWindow)
	case o.timeout <= 0:
		return fmt.Errorf("--timeout must be positive")
	case o.timeout > maxTimeout:
		return fmt.Errorf("--timeout %s is longer than %s", o.timeout, maxTimeout)
	case o.maxBody <= 0 || o.maxBody > sources.MaxBodyLimit:
		return fmt.Errorf("--max-body must be between 1 B and %d MiB", sources.MaxBodyLimit>>20)
	case o.maxSamples <= 0 || o.maxSamples > maxSamplesOpt:
		return fmt.Errorf("--max-samples must be between 1 and %d", maxSamplesOpt)
	case o.maxParallel < 0 || o.maxParallel > maxParallelOpt:
		return fmt.Errorf("--max-parallel must be between 0 (the default, 64) and %d", maxParallelOpt)
	}
	return nil
}

// mulSize multiplies a size by its unit, or fails on overflow.
func mulSize(n, mult int64) (int64, bool) {
	if n > math.MaxInt64/mult {
		return 0, false
	}
	return n * mult, true
}
