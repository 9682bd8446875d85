#!/usr/bin/env bash
# Benchmark of the simulator as the fleet load generator: one `vtop sim`
# process serving 1,000 replicas while vtop's own poller scrapes every one
# of them once a second. Reports the simulator's CPU (% of one core, from
# /proc) and resident memory. Everything stays on 127.0.0.1.
#
#   scripts/bench-sim.sh [REPLICAS] [MEASURE_SECONDS]
#   SCENARIO=busy scripts/bench-sim.sh       # heavier traffic on every replica
#
# Takes about MEASURE_SECONDS + 25 s (default 60 + 25).
set -euo pipefail
cd "$(dirname "$0")/.."

replicas=${1:-1000}
scenario=${SCENARIO:-healthy}
measure=${2:-60}
warm=15      # let every replica be scraped a few times before measuring
base=${BENCH_BASE_PORT:-20000}
tmp=$(mktemp -d)
sim_pid=""
scraper_pid=""
cleanup() {
  [ -n "$scraper_pid" ] && kill "$scraper_pid" 2>/dev/null || true
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/vtop" ./cmd/vtop

# The simulator, bounded in time so it always stops by itself.
"$tmp/vtop" sim --listen "127.0.0.1:$base" --replicas "$replicas" --scenario "$scenario" --for "$((warm + measure + 60))s" \
  >"$tmp/sim.out" 2>"$tmp/sim.err" &
sim_pid=$!
for _ in $(seq 100); do grep -q "vtop sim:" "$tmp/sim.out" 2>/dev/null && break; sleep 0.1; done
head -1 "$tmp/sim.out"

# The scraper: vtop --once over all replicas at 1 s for the whole run.
{
  echo "targets:"
  for i in $(seq 0 $((replicas - 1))); do echo "  - 127.0.0.1:$((base + i))"; done
} >"$tmp/targets.yaml"
"$tmp/vtop" --once -o json -i 1s -w "$((warm + measure))s" --max-parallel 128 --config "$tmp/targets.yaml" \
  >"$tmp/report.json" 2>"$tmp/scraper.err" &
scraper_pid=$!

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }   # utime + stime, clock ticks
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
hz=$(getconf CLK_TCK)

sleep "$warm"
t0=$(date +%s.%N); s0=$(ticks "$sim_pid"); c0=$(ticks "$scraper_pid")
n0=$(ss -Htn state established "( sport >= :$base and sport < :$((base + replicas)) )" | wc -l)
rss_max=0; rss_sum=0; rss_n=0
for _ in $(seq $((measure / 5))); do
  sleep 5
  r=$(rss_kib "$sim_pid"); rss_sum=$((rss_sum + r)); rss_n=$((rss_n + 1))
  [ "$r" -gt "$rss_max" ] && rss_max=$r
done
t1=$(date +%s.%N); s1=$(ticks "$sim_pid"); c1=$(ticks "$scraper_pid")

wait "$scraper_pid" || true   # exits 0..3 by status; the report is what matters
scraper_pid=""
kill -TERM "$sim_pid"
sim_status=0; wait "$sim_pid" || sim_status=$?
sim_pid=""

read -r up total < <(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["fleet"]; print(f["up"], f["total"])' "$tmp/report.json")
scrapes=$(grep -o '[0-9]* scrapes served' "$tmp/sim.err" | awk '{print $1}')
awk -v s0="$s0" -v s1="$s1" -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$hz" \
    -v rmax="$rss_max" -v rsum="$rss_sum" -v rn="$rss_n" -v reps="$replicas" -v conns="$n0" \
    -v up="$up" -v total="$total" -v scrapes="$scrapes" -v elapsed="$((warm + measure))" -v st="$sim_status" \
    -v warm="$warm" -v sc="$scenario" 'BEGIN {
  wall = t1 - t0
  printf "replicas            %d (vLLM latest, scenario %s), scraped by vtop --once at 1 s\n", reps, sc
  printf "measured            %.0f s after a %d s warm-up; %d scraper connections open\n", wall, warm, conns
  printf "simulator CPU       %.1f%% of one core\n", 100 * (s1 - s0) / hz / wall
  printf "simulator RSS       %.0f MiB average, %.0f MiB max\n", rsum / rn / 1024, rmax / 1024
  printf "scraper CPU         %.1f%% of one core (vtop, for reference)\n", 100 * (c1 - c0) / hz / wall
  printf "scrapes served      %d (%.0f/s over the scraper run)\n", scrapes, scrapes / elapsed
  printf "scraper saw         %d of %d endpoints up at the end\n", up, total
  printf "simulator exit      %d after SIGTERM\n", st
}'
