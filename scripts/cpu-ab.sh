#!/usr/bin/env bash
# CPU of vtop builds side by side: each given binary runs headless
# (--once -i 1s -w SECONDS, 128 scrapes at once) against the same `vtop sim`
# fleet of N busy endpoints, all at the same time, so a busy machine weighs
# on each alike. Prints each one's CPU seconds (utime+stime over its whole
# life) and how many endpoints were up at the end; when all are, each did the
# same polls, and the CPU ratio is the ratio per scrape. The first binary
# also serves the fleet (vtop sim).
#
#   scripts/cpu-ab.sh N SECONDS BINARY...     # e.g. 200 60 /tmp/old/vtop /tmp/new/vtop
set -euo pipefail
cd "$(dirname "$0")/.."
n=$1 secs=$2
shift 2
base=${BENCH_BASE_PORT:-26000}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.5; rm -rf "$tmp"; }
trap cleanup EXIT
"$1" sim --listen "127.0.0.1:$base" --replicas "$n" --scenario busy --for "$((secs + 60))s" >"$tmp/sim.out" 2>"$tmp/sim.err" &
pids+=($!)
for _ in $(seq 600); do grep -q "vtop sim:" "$tmp/sim.out" 2>/dev/null && break; sleep 0.1; done
grep -q "vtop sim:" "$tmp/sim.out" || { echo "the simulator did not start in 60 s:"; cat "$tmp/sim.err"; exit 1; }
{ echo "targets:"; for i in $(seq 0 $((n - 1))); do echo "  - 127.0.0.1:$((base + i))"; done; } >"$tmp/targets.yaml"
runs=()
k=0
for b in "$@"; do
  "$b" --once -o json -i 1s -w "${secs}s" --max-parallel 128 --gpu none --config "$tmp/targets.yaml" >"$tmp/report$k.json" 2>"$tmp/err$k" &
  runs+=($!); pids+=($!); k=$((k + 1))
done
declare -A cpu
while :; do
  alive=0
  for p in "${runs[@]}"; do
    [ -d "/proc/$p" ] || continue
    alive=1
    x=$(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || true)
    [ -n "$x" ] && cpu[$p]=$x
  done
  [ $alive = 0 ] && break
  sleep 1
done
hz=$(getconf CLK_TCK)
k=0
for b in "$@"; do
  p=${runs[$k]}
  up=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fleet"]["up"])' "$tmp/report$k.json" 2>/dev/null || echo "?")
  awk -v t="${cpu[$p]:-0}" -v hz="$hz" -v b="$b" -v up="$up" -v n="$n" 'BEGIN { printf "%-40s %6.2f s CPU, %s of %d up at the end\n", b, t / hz, up, n }'
  k=$((k + 1))
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
