#!/usr/bin/env bash
# What --record costs a whole vtop process: one `vtop sim` fleet (50 busy
# replicas by default) scraped at 1 s by two `vtop --once` processes side by
# side, one recording and one not, so both see the same machine state. Each
# process's CPU (utime + stime from /proc/PID/stat) is read after a warm-up
# and again MEASURE seconds later; the pair is run PAIRS times, which of the
# two starts first alternating. Prints each pair and the median ratio.
#
#   scripts/record-overhead.sh [REPLICAS] [MEASURE_SECONDS] [PAIRS]
#
# VTOP=path runs that binary instead of building this tree's (a reference
# build, measured beside this one in a second run at the same time).
#
# Takes about PAIRS × (MEASURE_SECONDS + 20 s) (default 3 × 140 s).
set -euo pipefail
cd "$(dirname "$0")/.."

replicas=${1:-50}
measure=${2:-120}
pairs=${3:-3}
scenario=${SCENARIO:-busy}
warm=15
# A random base port: two runs on one machine must not scrape each other's fleet.
base=${BENCH_BASE_PORT:-$((20000 + RANDOM % 20000))}
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

if [ -n "${VTOP:-}" ]; then cp "$VTOP" "$tmp/vtop"; else go build -o "$tmp/vtop" ./cmd/vtop; fi
total=$((pairs * (warm + measure + 10) + 60))
"$tmp/vtop" sim --listen "127.0.0.1:$base" --replicas "$replicas" --scenario "$scenario" --for "${total}s" \
  >"$tmp/sim.out" 2>"$tmp/sim.err" &
pids+=($!)
for _ in $(seq 100); do grep -q "vtop sim:" "$tmp/sim.out" "$tmp/sim.err" 2>/dev/null && break; sleep 0.1; done
if ! grep -q "vtop sim:" "$tmp/sim.out" "$tmp/sim.err"; then
  echo "vtop sim did not start:"; cat "$tmp/sim.err"; exit 1
fi
{
  echo "targets:"
  for i in $(seq 0 $((replicas - 1))); do echo "  - 127.0.0.1:$((base + i))"; done
} >"$tmp/targets.yaml"

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # utime + stime, clock ticks
hz=$(getconf CLK_TCK)
once() { # once VAR RECORD_FILE|"": starts a vtop --once, its pid in VAR
  local rec=()
  [ -n "$2" ] && rec=(--record "$2")
  "$tmp/vtop" --once -o json -i 1s -w "$((warm + measure + 5))s" --gpu none --config "$tmp/targets.yaml" "${rec[@]}" \
    >/dev/null 2>>"$tmp/once.err" &
  pids+=($!)
  printf -v "$1" %s $!
}

ratios=()
echo "replicas=$replicas scenario=$scenario measure=${measure}s pairs=$pairs binary=${VTOP:-this tree} $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
for k in $(seq "$pairs"); do
  rm -f "$tmp/rec.vtop"
  if [ $((k % 2)) = 1 ]; then once off ""; once on "$tmp/rec.vtop"
  else once on "$tmp/rec.vtop"; once off ""; fi
  sleep "$warm"
  off0=$(ticks "$off"); on0=$(ticks "$on"); l0=$(cut -d' ' -f1 /proc/loadavg)
  sleep "$measure"
  if ! off1=$(ticks "$off") || ! on1=$(ticks "$on"); then
    echo "a vtop --once ended before the measurement did:"; cat "$tmp/once.err"; exit 1
  fi
  l1=$(cut -d' ' -f1 /proc/loadavg)
  size=$(stat -c %s "$tmp/rec.vtop")
  wait "$off" "$on" || true
  r=$(awk -v a=$((on1 - on0)) -v b=$((off1 - off0)) 'BEGIN { printf "%.4f", a / b }')
  ratios+=("$r")
  awk -v a=$((off1 - off0)) -v b=$((on1 - on0)) -v hz="$hz" -v m="$measure" -v r="$r" -v s="$size" -v l0="$l0" -v l1="$l1" \
    'BEGIN { printf "pair: off %.2f s CPU (%.1f%% of a core), on %.2f s CPU (%.1f%%), ratio %s, recording %.0f KB, load %s→%s\n",
      a / hz, 100 * a / hz / m, b / hz, 100 * b / hz / m, r, s / 1e3, l0, l1 }'
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ r[NR] = $1 } END { printf "median ratio on/off: %s (%+.1f%%)\n", r[int((NR + 1) / 2)], 100 * (r[int((NR + 1) / 2)] - 1) }'
