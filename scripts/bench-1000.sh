#!/usr/bin/env bash
# Issue 23's figures at 1,000 endpoints, in one command, for a quiet machine:
#
#   scripts/bench-1000.sh [MEASURE_SECONDS]     # default 60
#
# Two runs of scripts/bench-prom.sh on a capfarm of 1,000 endpoints serving
# the real v0.10.1 capture with every counter advancing, Prometheus off (it
# would take the cores the targets are about): vtop headless alone, then
# vtop's TUI in tmux at 200x60 alone with 100 presses each of "?" and
# Escape timed to the screen. It prints each run's lines and then the
# targets: headless <= 0.3 core and <= 200 MB RSS; the TUI keeping >= 99 %
# of the 1,000 polls a second and key-to-screen p99 < 50 ms. VTOP=path
# measures that binary instead of this tree's. The load average is printed
# with every run: on a loaded machine the figures are the machine's.
set -euo pipefail
cd "$(dirname "$0")/.."
measure=${1:-60}
export BENCH_BASE_PORT=${BENCH_BASE_PORT:-43100} FARM=capture PROM=0
hl=$(MODES=headless scripts/bench-prom.sh 1000 "$measure")
echo "$hl"
tui=$(MODES=tui KEYS=${KEYS:-100} scripts/bench-prom.sh 1000 "$measure")
echo "$tui"
# "vtop headless    0.254 ms CPU per scrape (0.251 cores, 59000 scrapes = 98.3% of 1000/s), RSS max 184 MiB"
field() { sed -n "s/^$1 .*(\([0-9.]*\) cores, [0-9]* scrapes = \([0-9.]*\)% of [0-9]*\/s), RSS max \([0-9]*\) MiB.*/\\$2/p"; }
cores=$(field "vtop headless" 1 <<<"$hl")
rss=$(field "vtop headless" 3 <<<"$hl")
kept=$(field "vtop TUI 200x60" 2 <<<"$tui")
p99=$(sed -n 's/^key-to-screen .* p99 \([0-9.]*\) ms.*/\1/p' <<<"$tui")
verdict() { awk -v v="$1" -v lim="$2" -v op="$3" 'BEGIN { ok = (op == "<=") ? v <= lim : (op == ">=") ? v >= lim : v < lim; print (ok ? "met" : "NOT met") }'; }
echo
echo "headless cores   $cores (<= 0.3: $(verdict "$cores" 0.3 "<="))"
echo "headless RSS     $rss MiB = $(awk -v r="$rss" 'BEGIN {printf "%.0f", r * 1.048576}') MB (<= 200 MB: $(verdict "$(awk -v r="$rss" 'BEGIN {print r * 1.048576}')" 200 "<="))"
echo "TUI polls kept   $kept % (>= 99 %: $(verdict "$kept" 99 ">="))"
echo "TUI keys p99     $p99 ms (< 50 ms: $(verdict "$p99" 50 "<"))"
