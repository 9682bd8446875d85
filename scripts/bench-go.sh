#!/usr/bin/env bash
# Runs vtop's Go benchmarks and prints benchstat medians; BENCHMARKS.md
# records what this printed and on which machine.
#   scripts/bench-go.sh                 # everything
#   scripts/bench-go.sh ./sources       # one package
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
out=$(mktemp)
go test -run '^$' -bench . -benchtime "${BENCHTIME:-2s}" -count "${COUNT:-6}" "${pkgs[@]}" | tee "$out" | grep -E '^(Benchmark|ok|FAIL)'
echo
go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da "$out" 2>/dev/null || echo "(benchstat unavailable; raw results in $out)"
