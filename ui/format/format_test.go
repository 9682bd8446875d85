package format

import (
	"testing"
	"time"
)

func TestShort(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                   "0s",
		850 * time.Millisecond:         "850ms",
		12 * time.Second:               "12s",
		4*time.Minute + 59*time.Second: "4m",
		2*time.Hour + 59*time.Minute:   "2h",
		47 * time.Hour:                 "47h",
		80 * time.Hour:                 "3d",
	} {
		if got := Short(d); got != want {
			t.Errorf("Short(%v) = %q, want %q", d, got, want)
		}
	}
}
