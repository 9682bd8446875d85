#!/usr/bin/env bash
# Soak: vtop's TUI (in a detached tmux) against a `vtop sim` fleet with
# chaos for a given time, sampling vtop's RSS, goroutines and heap (from its
# --log) and CPU every 10 s into OUT/samples.txt; fails when RSS or
# goroutines grew more than 5 % after warm-up (first quarter after it
# against the last, medians; the verdict is also in OUT/result.txt). The
# warm-up is a tenth of the run, at least 2 min: history rings and the
# half-hour sparkline arrays are allocated at full size (and written
# through) when a target first answers, so nothing is still filling in.
#
#   scripts/soak.sh [DURATION_S] [ENDPOINTS]        # default 3600 1000
#   OUT=/tmp/soak scripts/soak.sh 600 200           # keep samples in OUT
#
# Chaos: the fleet runs as SIMS simulator processes (default 10); every
# CHAOS_S seconds (default 30) one of them is killed (-9) and restarted 10 s
# later, so a tenth of the fleet goes down and comes back; replicas run the
# restart and flapping scenarios among healthy/busy ones; beside them
# scripts/hostile.py serves hung, slow-drip, redirecting, resetting,
# gzip-bomb, oversize, label-churning, failing-churn, 10,000-model and
# absurd-value endpoints; the terminal is resized now and then.
# Everything listens on 127.0.0.1. Needs tmux and python3.
#
# FILE_SD=1: the targets come from a --file-sd file instead of the config
# file, and the chaos also goes through discovery: while a simulator is
# down its replicas are taken out of the file (departures from the running
# poller) and put back when it restarts (arrivals).
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${1:-3600}
endpoints=${2:-1000}
sims=${SIMS:-10}
chaos=${CHAOS_S:-30}
base=${SOAK_BASE_PORT:-21000}
hostile_base=$((base + endpoints + 100))
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
hostile_copies=1
fleet=$((endpoints - 10 * hostile_copies))
per=$(( (fleet + sims - 1) / sims ))
sock="vtop-soak-$$"
pids=()
sim_pids=()
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  for p in "${sim_pids[@]}" "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

go build -o "$out/vtop" ./cmd/vtop
vtop="$out/vtop"

start_sim() { # start_sim K: simulator K serves replicas K*per .. K*per+per-1
  local k=$1 n=$per
  [ $((k * per + n)) -gt "$fleet" ] && n=$((fleet - k * per))
  "$vtop" sim --listen "127.0.0.1:$((base + k * per))" --replicas "$n" --seed "$((k + 1))" \
    --scenario healthy --scenario busy --scenario restart --scenario healthy --scenario flapping \
    >"$out/sim$k.out" 2>>"$out/sim$k.err" &
  sim_pids[$k]=$!
}
for k in $(seq 0 $((sims - 1))); do start_sim "$k"; done
python3 scripts/hostile.py "$hostile_base" "$hostile_copies" >"$out/hostile.out" 2>"$out/hostile.err" &
pids+=($!)
sleep 3

{
  echo "targets:"
  for i in $(seq 0 $((fleet - 1))); do echo "  - 127.0.0.1:$((base + i))"; done
  for i in $(seq 0 $((10 * hostile_copies - 1))); do echo "  - 127.0.0.1:$((hostile_base + i))"; done
} >"$out/targets.yaml"

write_sd() { # write_sd [DOWN]: every target but simulator DOWN's, renamed into place
  local down=${1:--1}
  {
    echo "- targets:"
    for i in $(seq 0 $((fleet - 1))); do
      [ "$down" -ge 0 ] && [ $((i / per)) -eq "$down" ] && continue
      echo "    - 127.0.0.1:$((base + i))"
    done
    for i in $(seq 0 $((10 * hostile_copies - 1))); do echo "    - 127.0.0.1:$((hostile_base + i))"; done
  } >"$out/sd.yaml.tmp"
  mv "$out/sd.yaml.tmp" "$out/sd.yaml"
}
targets_arg="--config $out/targets.yaml"
if [ "${FILE_SD:-0}" = 1 ]; then
  write_sd
  targets_arg="--file-sd $out/sd.yaml"
fi

tmux -L "$sock" -f /dev/null new-session -d -x 200 -y 50 \
  "env TERM=xterm-256color $vtop -i 1s -w 60s --log $out/vtop.log $targets_arg 2>$out/vtop.err; echo VTOP-EXIT=\$? > $out/exit"
sleep 2
vpid=$(pgrep -n -f "^$vtop -i 1s -w 60s --log $out/vtop.log") || { echo "vtop did not start"; cat "$out/vtop.err"; exit 1; }
echo "soak: vtop pid $vpid, $fleet simulated replicas in $sims processes + $((10 * hostile_copies)) hostile endpoints, ${duration}s; samples in $out"

hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
echo "t_s rss_kib threads cpu_ticks goroutines heap_inuse_kib" >"$out/samples.txt"
t0=$(date +%s)
next_chaos=$((t0 + chaos))
down=-1; up_at=0
while :; do
  now=$(date +%s)
  el=$((now - t0))
  [ "$el" -ge "$duration" ] && break
  if [ ! -d "/proc/$vpid" ]; then echo "FAIL: vtop exited after ${el}s"; cat "$out/exit" "$out/vtop.err" 2>/dev/null; exit 1; fi
  if [ "$down" -ge 0 ] && [ "$now" -ge "$up_at" ]; then
    start_sim "$down"; down=-1
    [ "${FILE_SD:-0}" = 1 ] && write_sd
  fi
  if [ "$down" -lt 0 ] && [ "$now" -ge "$next_chaos" ]; then
    down=$((RANDOM % sims)); kill -9 "${sim_pids[$down]}" 2>/dev/null || true
    [ "${FILE_SD:-0}" = 1 ] && write_sd "$down"
    wait "${sim_pids[$down]}" 2>/dev/null || true
    up_at=$((now + 10)); next_chaos=$((now + chaos))
    if [ $((RANDOM % 4)) -eq 0 ]; then tmux -L "$sock" resize-window -x $((120 + RANDOM % 100)) -y $((30 + RANDOM % 30)) 2>/dev/null || true; fi
  fi
  rt=$( (grep 'goroutines=' "$out/vtop.log" 2>/dev/null || true) | tail -1)
  g=$( (echo "$rt" | grep -o 'goroutines=[0-9]*' || true) | cut -d= -f2)
  h=$( (echo "$rt" | grep -o 'heap_inuse=[0-9]*' || true) | cut -d= -f2)
  echo "$el $(awk '/VmRSS/ {print $2}' /proc/$vpid/status) $(awk '/Threads/ {print $2}' /proc/$vpid/status) $(ticks "$vpid") ${g:-NA} $([ -n "$h" ] && echo $((h / 1024)) || echo NA)" >>"$out/samples.txt"
  sleep 10
done
tmux -L "$sock" send-keys q
sleep 2

python3 - "$out/samples.txt" "$duration" "$hz" "$(du -k "$out/vtop.log" | cut -f1)" <<'PY' | tee "$out/result.txt"
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
dur, hz, logk = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rows = [(int(t), int(r), int(th), int(c), None if g == "NA" else int(g), None if h == "NA" else int(h)) for t, r, th, c, g, h in rows]
warm = max(120, dur // 10)
after = [r for r in rows if r[0] >= warm]
if len(after) < 8:
    print("FAIL: too few samples after the %d s warm-up" % warm); sys.exit(1)
q = len(after) // 4
first, last = after[:q], after[-q:]
def med(rs, i):
    v = [r[i] for r in rs if r[i] is not None]
    return statistics.median(v) if v else float("nan")
rss0, rss1 = med(first, 1) / 1024, med(last, 1) / 1024
g0, g1 = med(first, 4), med(last, 4)
cpu = (rows[-1][3] - after[0][3]) / hz / (rows[-1][0] - after[0][0])
print("ran %d s (%d samples), warm-up %d s" % (rows[-1][0], len(rows), warm))
print("RSS         %.0f MiB (first quarter after warm-up, median) -> %.0f MiB (last quarter); max %.0f MiB" % (rss0, rss1, max(r[1] for r in rows) / 1024))
print("goroutines  %s -> %s; max %s" % (g0, g1, max((r[4] for r in rows if r[4] is not None), default="NA")))
print("threads     %d -> %d" % (med(first, 2), med(last, 2)))
print("heap in use %.0f MiB -> %.0f MiB (from --log, every 10 s)" % (med(first, 5) / 1024, med(last, 5) / 1024))
print("CPU         %.2f cores average after warm-up" % cpu)
print("log         %d KiB" % logk)
bad = []
if rss1 > rss0 * 1.05:
    bad.append("RSS grew %.1f %%" % (100 * (rss1 / rss0 - 1)))
if g1 == g1 and g0 == g0 and g1 > g0 * 1.05 + 20:
    bad.append("goroutines grew from %s to %s" % (g0, g1))
print("FAIL: " + "; ".join(bad) if bad else "PASS: RSS and goroutines flat within 5 % after warm-up")
sys.exit(1 if bad else 0)
PY
