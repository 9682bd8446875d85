# FARM=capture for scripts/bench-prom.sh (sourced by it: n, measure, base,
# tmp, pids and the cleanup trap are its). See that script's header.
command -v tmux >/dev/null || { echo "tmux is not installed (apt-get install tmux)"; exit 1; }
modes=${MODES:-headless tui}
keys=${KEYS:-0}
warm=20
capture=${CAPTURE:-testdata/dumps/armandossrecife-vllm-server-api-chat__v0.10.1-ngc25.09_full.txt}
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -Wno-deprecated-declarations"
if [ -n "${VTOP:-}" ]; then cp "$VTOP" "$tmp/vtop"; else go build -o "$tmp/vtop" ./cmd/vtop; fi
# BASE=path: a second TUI, that binary (a baseline), scraping the same farm
# in the same seconds beside the first; its keys are timed alternately.
[ -n "${BASE:-}" ] && cp "$BASE" "$tmp/vtop-base"
go build -o "$tmp/capfarm" ./scripts/capfarm
sock="vtop-bench-$$"
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; tmux -L "$sock-b" kill-server 2>/dev/null || true; cleanup' EXIT

"$tmp/capfarm" --capture "$capture" --listen "127.0.0.1:$base" --endpoints "$n" --ports-file "$tmp/ports" >"$tmp/farm.out" 2>"$tmp/farm.err" &
farm=$!; pids+=($farm)
for _ in $(seq 100); do grep -q "capfarm:" "$tmp/farm.out" 2>/dev/null && break; sleep 0.1; done
grep -q "capfarm:" "$tmp/farm.out" || { echo "capfarm did not start:"; cat "$tmp/farm.err"; exit 1; }
mapfile -t ports <"$tmp/ports"
counts() { curl -s "http://127.0.0.1:${ports[0]}/capfarm/counts"; } # "h=1 metrics=2 t=3"
count() { tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k {print $2; f=1} END {if (!f) print 0}'; }

targets() { # targets PATH-PREFIX
  echo "targets:"
  for p in "${ports[@]}"; do echo "  - http://127.0.0.1:$p/$1/metrics"; done
}
targets h >"$tmp/headless.yaml"
targets t >"$tmp/tui.yaml"
targets b >"$tmp/base.yaml"
{
  echo "global: {scrape_interval: 1s, scrape_timeout: 1s}"
  echo "scrape_configs:"
  echo "  - job_name: vllm"
  echo "    static_configs:"
  echo "      - targets:"
  for p in "${ports[@]}"; do echo "          - 127.0.0.1:$p"; done
} >"$tmp/prometheus.yml"

prom=0
if [ "${PROM:-1}" = 1 ]; then
  prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" --web.listen-address=127.0.0.1:$((base - 1)) \
    --log.level=warn >"$tmp/prom.out" 2>&1 &
  prom=$!; pids+=($prom)
fi
hl=""; tui=""
if [[ " $modes " == *" headless "* ]]; then
  "$tmp/vtop" --once -o json -i 1s -w "$((warm + measure + 90))s" --max-parallel 128 --gpu none --config "$tmp/headless.yaml" \
    >"$tmp/report.json" 2>"$tmp/vtop.err" &
  hl=$!; pids+=($hl)
fi
starttui() { # starttui SOCKET BINARY CONFIG: prints the TUI's pid
  # A real terminal of 200x60 (tmux), TERM as a terminal sets it.
  tmux -L "$1" -f /dev/null new-session -d -x 200 -y 60 \
    env -i PATH="$PATH" HOME="$tmp" TERM=xterm-256color LANG=C.UTF-8 XDG_CONFIG_HOME="$tmp" \
    "$2" -i 1s --max-parallel 128 --gpu none --config "$3"
  local p=""
  for _ in $(seq 50); do
    p=$(pgrep -f "^$2 -i 1s" || true)
    [ -n "$p" ] && break
    sleep 0.1
  done
  echo "$p"
}
bl=""
if [[ " $modes " == *" tui "* ]]; then
  tui=$(starttui "$sock" "$tmp/vtop" "$tmp/tui.yaml")
  [ -n "$tui" ] || { echo "the TUI did not start"; exit 1; }
  if [ -n "${BASE:-}" ]; then
    bl=$(starttui "$sock-b" "$tmp/vtop-base" "$tmp/base.yaml")
    [ -n "$bl" ] || { echo "the baseline TUI did not start"; exit 1; }
  fi
fi

ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)
sleep "$warm"
c0=$(counts); t0=$(date +%s.%N)
p0=$(ticks $prom); h0=$(ticks "${hl:-0}"); u0=$(ticks "${tui:-0}"); b0=$(ticks "${bl:-0}")
pmax=0; hmax=0; umax=0; bmax=0
end=$((SECONDS + measure))
while [ "$SECONDS" -lt "$end" ]; do
  sleep 1
  [ "$prom" != 0 ] && { r=$(rss $prom); [ "${r:-0}" -gt "$pmax" ] && pmax=$r; }
  [ -n "$hl" ] && { r=$(rss "$hl"); [ "${r:-0}" -gt "$hmax" ] && hmax=$r; }
  [ -n "$tui" ] && { r=$(rss "$tui"); [ "${r:-0}" -gt "$umax" ] && umax=$r; }
  [ -n "$bl" ] && { r=$(rss "$bl"); [ "${r:-0}" -gt "$bmax" ] && bmax=$r; }
done
c1=$(counts); t1=$(date +%s.%N)
p1=$(ticks $prom); h1=$(ticks "${hl:-0}"); u1=$(ticks "${tui:-0}"); b1=$(ticks "${bl:-0}")
for p in $prom $hl $tui $bl; do
  [ "$p" = 0 ] || [ -d "/proc/$p" ] || { echo "process $p ended before the window did: no figure (load $(cut -d' ' -f1-3 /proc/loadavg))"; exit 1; }
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
printf "endpoints        %d (capfarm: %s, every counter and bucket advancing), %.0f s measured after %d s; load average %s\n" \
  "$n" "$(basename "$capture")" "$wall" "$warm" "$load"
line() { # line LABEL TICKS0 TICKS1 SCRAPES RSS_KIB
  awk -v l="$1" -v a="$2" -v b="$3" -v s="$4" -v r="$5" -v hz="$hz" -v w="$wall" -v n="$n" 'BEGIN {
    c = (b - a) / hz
    printf "%-16s %.3f ms CPU per scrape (%.3f cores, %d scrapes = %.1f%% of %d/s), RSS max %.0f MiB\n", l, 1000 * c / s, c / w, s, 100 * s / (n * w), n, r / 1024 }'
}
ps=$(( $(count "$c1" metrics) - $(count "$c0" metrics) ))
[ "$prom" != 0 ] && line "prometheus 2.42" "$p0" "$p1" "$ps" "$pmax"
ratio() { awk -v a="$1" -v b="$2" -v s="$3" -v pa="$p0" -v pb="$p1" -v ps="$ps" 'BEGIN {printf "%.2f", ((b - a) / s) / ((pb - pa) / ps)}'; }
if [ -n "$hl" ]; then
  hs=$(( $(count "$c1" h) - $(count "$c0" h) ))
  line "vtop headless" "$h0" "$h1" "$hs" "$hmax"
fi
if [ -n "$tui" ]; then
  us=$(( $(count "$c1" t) - $(count "$c0" t) ))
  line "vtop TUI 200x60" "$u0" "$u1" "$us" "$umax"
fi
if [ -n "$bl" ]; then
  bs=$(( $(count "$c1" b) - $(count "$c0" b) ))
  line "baseline TUI" "$b0" "$b1" "$bs" "$bmax"
fi
[ "$prom" = 0 ] && hl_r="" || hl_r=1
[ -n "$hl" ] && [ -n "$hl_r" ] && echo "ratio headless   $(ratio "$h0" "$h1" "$hs") (vtop / prometheus, CPU per scrape)"
[ -n "$tui" ] && [ -n "$hl_r" ] && echo "ratio TUI        $(ratio "$u0" "$u1" "$us") (vtop / prometheus, CPU per scrape)"
[ -n "$bl" ] && [ -n "$hl_r" ] && echo "ratio baseline   $(ratio "$b0" "$b1" "$bs") (baseline / prometheus, CPU per scrape)"

if [ -n "$tui" ] && [ "$keys" -gt 0 ]; then
  if [ -n "$bl" ]; then
    scripts/keytime.py "$keys" "$sock" "$sock-b" # the TUI, then the baseline, press by press
  else
    scripts/keytime.py "$keys" "$sock"
  fi
fi
