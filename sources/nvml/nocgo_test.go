//go:build !cgo

package nvml

import (
	"context"
	"testing"
)

func TestCompiledOut(t *testing.T) {
	src := Open(Options{})
	snap := src.Sample(context.Background())
	if snap.Unavailable != "NVML compiled out (built without cgo)" || len(snap.GPUs) != 0 || snap.Time.IsZero() {
		t.Fatalf("%+v", snap)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
}
