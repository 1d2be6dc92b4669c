# Requests per second and latency under wrk. Sourced.
#
# A scenario is a route and a load shape. In each scenario every server gets
# a warm-up run, then the servers take turns: round 1 runs each server once,
# round 2 again, and so on, the starting server rotating from round to round
# so that none always follows the same neighbour. Slow drifts of the machine
# (another job starting, the CPU clocking down) then land on every server
# alike instead of on whoever ran last. wrk runs with one thread on CPU 1;
# the servers share CPU 0, one serving at a time.

ALL_SCENARIOS=(hello-32 hello-pipeline hello-256 users-32 users-pipeline users-256)
WRK_CPU=1
PIPELINE_DEPTH=16

CSV_HEADER=scenario,round,position,server,connections,pipeline,duration_s,requests,rps,p50_us,p99_us,errors_connect,errors_read,errors_write,errors_status,errors_timeout,server_core_busy_pct,wrk_core_busy_pct,server_cpu_pct,wrk_cpu_pct,other_cpu_pct

# scenario_spec NAME: prints "ROUTE CONNECTIONS DEPTH".
scenario_spec() {
  local route=${1%%-*} shape=${1#*-}
  case $route in hello | users) ;; *) return 1 ;; esac
  case $shape in
    32) echo "$route 32 1" ;;
    256) echo "$route 256 1" ;;
    pipeline) echo "$route 32 $PIPELINE_DEPTH" ;;
    *) return 1 ;;
  esac
}

# run_wrk PORT PATH CONNECTIONS DEPTH SECONDS: one wrk run; prints the
# RESULT line of bench/wrk/measure.lua with wrk_ticks=N (wrk's CPU time)
# added, or fails with wrk's output on stderr.
run_wrk() {
  local port=$1 path=$2 conns=$3 depth=$4 secs=$5 out result
  # `times` must run in the shell that waited for wrk: its last line is the
  # CPU time of that shell's children.
  out=$(timeout -k 5 $((secs + 30)) taskset -c "$WRK_CPU" \
    wrk -t1 -c"$conns" -d"${secs}s" --timeout 5s \
      -s "$BENCH_DIR/wrk/measure.lua" "http://127.0.0.1:$port$path" -- "$depth" 2>&1
    times)
  if ! result=$(grep -m1 '^RESULT ' <<<"$out"); then
    printf '%s\n' "$out" >&2
    return 1
  fi
  echo "$result wrk_ticks=$(times_ticks "$(tail -n1 <<<"$out")")"
}

# result_field LINE KEY: the value of KEY=VALUE in a RESULT line.
result_field() {
  local kv
  for kv in $1; do
    [[ ${kv%%=*} == "$2" ]] && { echo "${kv#*=}"; return; }
  done
}

# measure_round SCENARIO ROUND POSITION SERVER: one measured wrk run against
# SERVER; appends its CSV row and prints its requests per second (whole).
measure_round() {
  local name=$1 round=$2 position=$3 server=$4 route conns depth inst pid line
  local t0 t1 c0 c1 s0 s1 seconds rps key fields shares
  read -r route conns depth <<<"$(scenario_spec "$name")"
  inst=$(instance_of "$server" "$route")
  pid=${STARTED_PID[$inst]}

  t0=$EPOCHREALTIME c0=$(cpu_sample) s0=$(tree_ticks "$pid")
  line=$(run_wrk "${INSTANCE_PORT[$inst]}" "$(route_path "$route")" "$conns" "$depth" "$DURATION") \
    || die "wrk failed against $server in $name round $round (output above)"
  c1=$(cpu_sample) s1=$(tree_ticks "$pid") t1=$EPOCHREALTIME
  instance_alive "$inst" \
    || { tail -n 20 "$WORK/logs/$inst.log" >&2; die "$inst died during $name (log above)"; }

  seconds=$(awk -v us="$(result_field "$line" duration_us)" 'BEGIN { printf "%.3f", us / 1e6 }')
  rps=$(awk -v n="$(result_field "$line" requests)" -v us="$(result_field "$line" duration_us)" \
    'BEGIN { printf "%.1f", n / (us / 1e6) }')
  fields=("$name" "$round" "$position" "$server" "$conns" "$depth" "$seconds"
    "$(result_field "$line" requests)" "$rps")
  for key in p50_us p99_us connect read write status timeout; do
    fields+=("$(result_field "$line" "$key")")
  done
  read -r -a shares <<<"$(cpu_shares "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
    "$c0" "$c1" $((s1 - s0)) "$(result_field "$line" wrk_ticks)")"
  fields+=("${shares[@]}")
  (IFS=,; echo "${fields[*]}") >>"$CSV"
  echo "${rps%.*}"
}

# run_scenario NAME: a warm-up run per server, then ROUNDS interleaved
# rounds; appends one CSV row per server and round to $CSV.
run_scenario() {
  local name=$1 route conns depth server inst
  read -r route conns depth <<<"$(scenario_spec "$name")"
  log "scenario $name: GET $(route_path "$route"), $conns connections, $depth per write;" \
    "$ROUNDS rounds of ${DURATION} s after a ${WARMUP} s warm-up"

  for server in "${SERVERS[@]}"; do
    inst=$(instance_of "$server" "$route")
    run_wrk "${INSTANCE_PORT[$inst]}" "$(route_path "$route")" "$conns" "$depth" "$WARMUP" \
      >/dev/null || die "wrk failed warming up $server in $name (output above)"
  done
  interleave "$name" measure_round "${SERVERS[@]}"
}

# interleave SCENARIO MEASURE SERVER...: ROUNDS rounds, each running
# `MEASURE SCENARIO ROUND POSITION SERVER` once per server, the first
# server rotating from round to round; logs each round: every server with
# what MEASURE printed.
interleave() {
  local scenario=$1 measure=$2 n r k server summary
  shift 2
  local servers=("$@")
  n=${#servers[@]}
  for ((r = 1; r <= ROUNDS; r++)); do
    summary=""
    for ((k = 0; k < n; k++)); do
      server=${servers[$(((k + r - 1) % n))]}
      summary+="${summary:+, }$server $("$measure" "$scenario" "$r" $((k + 1)) "$server")"
    done
    log "  round $r/$ROUNDS: $summary"
  done
}
