#!/usr/bin/env bash
# CPU per scrape: vtop against Prometheus 2.42 scraping the same endpoints at
# 1 s, in the same run, so a busy machine weighs on both alike. Prints each
# one's CPU per scrape, the ratio, and resident memory. Everything stays on
# 127.0.0.1.
#
#   scripts/bench-prom.sh [ENDPOINTS] [MEASURE_SECONDS]     # default 200 60
#
# FARM=sim (the default): `vtop sim` busy replicas; vtop runs headless
# (--once) for MEASURE_SECONDS (at least 60 s) with the 60 s window the TUI
# uses; both are measured over their whole lives.
#
# FARM=capture: scripts/capfarm serves a real capture (CAPTURE, the v0.10.1
# one by default) with every counter and bucket advancing on each request, as
# a busy server's body changes. Prometheus, a headless vtop (--once) and
# vtop's TUI in tmux at 200x60 (MODES="headless tui", either alone) scrape
# the same endpoints at once; each scraper's requests are counted by the farm
# (by URL path), and CPU (utime + stime from /proc/PID/stat) and scrapes are
# read after a 20 s warm-up and MEASURE_SECONDS later. KEYS=N then presses
# "?" and Escape N times each in the TUI and times each to its screen
# (tmux capture-pane polled every 1 ms): key-to-screen p50/p99.
# VTOP=path measures that binary instead of this tree's; BASE=path runs a
# second TUI, that binary, beside it on the same farm (a baseline in the
# same seconds), its keys timed alternately with the first one's.
set -euo pipefail
cd "$(dirname "$0")/.."

n=${1:-200}
measure=${2:-60}
warm=15
base=${BENCH_BASE_PORT:-24000}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.5; rm -rf "$tmp"; }
trap cleanup EXIT
command -v prometheus >/dev/null || { echo "prometheus is not installed (apt-get install prometheus)"; exit 1; }
if [ "${FARM:-sim}" = capture ]; then
  # shellcheck source=scripts/bench-prom-capture.sh
  . scripts/bench-prom-capture.sh
  exit
fi

export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -Wno-deprecated-declarations"
go build -o "$tmp/vtop" ./cmd/vtop
"$tmp/vtop" sim --listen "127.0.0.1:$base" --replicas "$n" --scenario busy --for "$((warm + measure + 120))s" >"$tmp/sim.out" 2>"$tmp/sim.err" &
pids+=($!)
for _ in $(seq 100); do grep -q "vtop sim:" "$tmp/sim.out" 2>/dev/null && break; sleep 0.1; done

{
  echo "targets:"
  for i in $(seq 0 $((n - 1))); do echo "  - 127.0.0.1:$((base + i))"; done
} >"$tmp/targets.yaml"
{
  echo "global: {scrape_interval: 1s, scrape_timeout: 1s}"
  echo "scrape_configs:"
  echo "  - job_name: vllm"
  echo "    static_configs:"
  echo "      - targets:"
  for i in $(seq 0 $((n - 1))); do echo "          - 127.0.0.1:$((base + i))"; done
} >"$tmp/prometheus.yml"

prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" --web.listen-address=127.0.0.1:$((base - 1)) \
  --log.level=warn >"$tmp/prom.out" 2>&1 &
prom=$!; pids+=($prom)
"$tmp/vtop" --once -o json -i 1s -w "$(( measure > 60 ? measure : 60 ))s" --max-parallel 128 --gpu none --config "$tmp/targets.yaml" >"$tmp/report.json" 2>"$tmp/vtop.err" &
vtop=$!; pids+=($vtop)

ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || true; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)
q() { curl -s "http://127.0.0.1:$((base - 1))/api/v1/query" --data-urlencode "query=$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)'; }
# Whole lives, side by side: both start together and are measured until
# vtop's --once run ends. Scrapes are counted, not assumed: the simulator
# counts every scrape it served, Prometheus its own, vtop's are the rest.
t0=$(date +%s.%N)
vt=0; pt=0; vmax=0; pmax=0
while [ -d "/proc/$vtop" ]; do
  x=$(ticks $vtop); [ -n "$x" ] && vt=$x
  pt=$(ticks $prom)
  r=$(rss $vtop); [ "${r:-0}" -gt "$vmax" ] && vmax=$r
  r=$(rss $prom); [ "${r:-0}" -gt "$pmax" ] && pmax=$r
  sleep 1
done
t1=$(date +%s.%N)
pscr=$(q 'sum(count_over_time(up[1h]))')
pup=$(q 'sum(up)')
pt=$(ticks $prom)
kill -STOP $prom
kill -TERM "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true
served=$(grep -o '[0-9]* scrapes served' "$tmp/sim.err" | awk '{print $1}')
kill -CONT $prom; kill $prom
up=$(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["fleet"]; print(f["up"])' "$tmp/report.json" 2>/dev/null || echo "?")
load=$(cut -d' ' -f1-3 /proc/loadavg)
awk -v vt="$vt" -v pt="$pt" -v t0="$t0" -v t1="$t1" -v hz="$hz" -v n="$n" -v pscr="$pscr" -v served="$served" \
    -v vmax="$vmax" -v pmax="$pmax" -v up="$up" -v pup="$pup" -v load="$load" 'BEGIN {
  wall = t1 - t0
  vs = served - pscr
  vc = vt / hz; pc = pt / hz
  printf "endpoints        %d (vtop sim, busy), both scraping at 1 s for %.0f s; load average at the end %s\n", n, wall, load
  printf "vtop             %.3f ms CPU per scrape (%.2f cores, %d scrapes = %.0f%% of %d/s), RSS max %.0f MiB, %s up at the end\n", 1000 * vc / vs, vc / wall, vs, 100 * vs / (n * wall), n, vmax / 1024, up
  printf "prometheus 2.42  %.3f ms CPU per scrape (%.2f cores, %d scrapes = %.0f%% of %d/s), RSS max %.0f MiB, %d up\n", 1000 * pc / pscr, pc / wall, pscr, 100 * pscr / (n * wall), n, pmax / 1024, pup
  printf "ratio            %.2f (vtop / prometheus, CPU per scrape)\n", (vc / vs) / (pc / pscr)
}'
