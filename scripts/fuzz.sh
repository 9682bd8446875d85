#!/usr/bin/env bash
# Runs every fuzz target for FUZZTIME each (default 5m; .ci/run uses 10s).
# A failure leaves its input under the package's testdata/fuzz/, where plain
# `go test` replays it from then on: read it, fix the bug, commit the input.
#   FUZZTIME=30m scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -Wno-deprecated-declarations"
fuzztime="${FUZZTIME:-5m}"
# inputs counts the inputs in a corpus directory (0 when there is none).
inputs() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }
# Each package's fuzz targets, found by name so a new one is fuzzed too.
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "-- $pkg $target ($fuzztime)"
    corpus="$dir/testdata/fuzz/$target"
    before=$(inputs "$corpus")
    out=$(mktemp)
    if ! go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" 2>&1 | tee "$out"; then
      # Go's fuzzer can end a time-bounded run with "context deadline
      # exceeded" when a worker is slow to stop on a loaded machine; that is
      # not a finding. A real one always writes its input to the corpus.
      after=$(inputs "$corpus")
      if [ "$after" = "$before" ] && grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out"; then
        echo "   (the fuzzer's own shutdown timed out; no failing input was found)"
      else
        rm -f "$out"
        exit 1
      fi
    fi
    rm -f "$out"
  done
done
