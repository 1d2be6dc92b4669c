# Large bodies through moonport: a 512 MiB download written in 64 KiB
# pieces, and a 512 MiB chunked upload read with req:read, each with curl
# on CPU 1, moonport on CPU 0. Throughput is the median of RUNS transfers;
# the RSS growth is the peak during them (VmHWM, reset first) less the RSS
# before. Sourced.

BIG_MIB=512

# measure_big_bodies RUNS: appends "download mb_s=.. growth_kb=.." and
# "upload ..." to $WORK/bigbody.txt.
measure_big_bodies() {
  local runs=$1 port pid rss0 kind rates growth out
  port=$(free_port)
  taskset -c "$SERVER_CPU" "$ROOT/build-bench/moonport" --listen "127.0.0.1:$port" \
    --max-body-size 1024m "$BENCH_DIR/lib/bigbody.lua" >/dev/null 2>"$WORK/logs/bigbody.err" &
  pid=$!
  STARTED_PID[bigbody]=$pid
  "$PY" "$BENCH_DIR/lib/probe.py" wait "$port" /download/0 --pid "$pid" --timeout 10 \
    || die "the large-body app did not start"
  for kind in download upload; do
    rss0=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
    echo 5 >"/proc/$pid/clear_refs"  # reset VmHWM to the current RSS
    rates=()
    for _ in $(seq "$runs"); do
      if [[ $kind == download ]]; then
        out=$(taskset -c "$WRK_CPU" curl -sf -o /dev/null -w '%{size_download} %{time_total}' \
          "http://127.0.0.1:$port/download/$BIG_MIB") || die "download failed"
      else
        out=$(head -c $((BIG_MIB * 1024 * 1024)) /dev/zero |
          taskset -c "$WRK_CPU" curl -sf -T - -H 'Expect:' -o /dev/null \
            -w '%{size_upload} %{time_total}' "http://127.0.0.1:$port/upload") \
          || die "upload failed"
      fi
      rates+=("$(awk -v o="$out" 'BEGIN { split(o, a, " "); printf "%.0f", a[1] / a[2] / 1e6 }')")
    done
    growth=$(($(awk '/^VmHWM/ {print $2}' "/proc/$pid/status") - rss0))
    log "$kind $BIG_MIB MiB: ${rates[*]} MB/s, RSS growth $growth KiB"
    local IFS=,
    echo "$kind mb_s=$(median "${rates[@]}") growth_kb=$growth runs=${rates[*]}" \
      >>"$WORK/bigbody.txt"
    unset IFS
  done
  stop_pid "$pid"
  unset "STARTED_PID[bigbody]"
}
