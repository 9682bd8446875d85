package main

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFlagBounds: --backfill has an upper bound, and --at with Go's zero
// time (which means "now" inside vtop) is refused rather than silently
// reporting the present; both for --prometheus and for replay.
func TestFlagBounds(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--prometheus", "http://127.0.0.1:1", "--backfill", "100000h"}, "--backfill 100000h0m0s is more than 168h0m0s"},
		{[]string{"--once", "--prometheus", "http://127.0.0.1:1", "--at", "0001-01-01T00:00:00Z"}, "is before 1970"},
	} {
		_, _, err := resolve(c.args, envFor(t))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
	if _, err := parseAt("0001-01-01T00:00:00Z", time.Now()); err == nil {
		t.Error("replay --at 0001-01-01: accepted")
	}
	// Static targets have the bound discovered ones have: each keeps its
	// own history (before, any number was polled).
	var many []string
	for i := range 10_001 {
		many = append(many, "127.0.0.1:"+strconv.Itoa(10_000+i))
	}
	if _, _, err := resolve(many, envFor(t)); err == nil || !strings.Contains(err.Error(), "10001 targets, more than the limit of 10000: point vtop at Prometheus") {
		t.Errorf("10,001 targets: %v", err)
	}
	if _, _, err := resolve(many[:10_000], envFor(t)); err != nil {
		t.Errorf("10,000 targets: %v", err)
	}
}
