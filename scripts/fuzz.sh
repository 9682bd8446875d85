#!/usr/bin/env bash
# Runs every fuzz target for FUZZTIME each (default 5m; .ci/run uses 10s).
# A failure leaves its input under the package's testdata/fuzz/, where plain
# `go test` replays it from then on: read it, fix the bug, commit the input.
#   FUZZTIME=30m scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -Wno-deprecated-declarations"
fuzztime="${FUZZTIME:-5m}"
# Each package's fuzz targets, found by name so a new one is fuzzed too.
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "-- $pkg $target ($fuzztime)"
    go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime"
  done
done
