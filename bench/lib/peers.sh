# What the peer benchmarks share (bench/redis/run, bench/tfb/run,
# bench/http/run): servers whose handlers call an upstream (Redis,
# PostgreSQL, a second HTTP server), measured side by side under wrk.
# Sourced after common.sh, deps.sh, servers.sh, meta.sh, cpu.sh and
# throughput.sh.
#
# Every server runs for the whole benchmark. A scenario gives each server
# (of those that serve it) a warm-up run, then ROUNDS rounds that
# interleave them, the first one rotating from round to round. Each
# measured run appends a CSV row (peer_csv_columns): requests per second,
# wrk's latency and errors, the CPU time per request of the server's and of
# the upstream's process trees (user + system from /proc/PID/stat around
# the run, over the 2xx answers), and how busy each core was. In the
# middle of each server's last run, the connections its process tree holds
# to the upstream (its pool under load) go to $WORK/upstream.tsv.
#
# The benchmark sets, before calling anything here:
#   SERVERS        the servers, in table order;
#   ROUNDS, DURATION, WARMUP  rounds per scenario, seconds per run;
#   CONNECTIONS    wrk's connections: a scenario's, unless it says its own
#                  (scenario_connections), and the allocation runs';
#   UPSTREAM       the upstream's name in the CSV columns (redis, db, ...);
#   UPSTREAM_PID   the upstream's process, its tree's CPU time counted;
#   UPSTREAM_PORT  the port the servers connect to: its pool is counted;
#   UPSTREAM_LOG   the upstream's log, shown if it dies;
#   HERE, REPORT_PY  the benchmark's folder and helper script (its alloc
#                  command, bench/lib/peer_report.py);
#   COUNTER        optional: a count read around each run by run_counter
#                  (tfb: PostgreSQL's statements), reported per request in
#                  column COUNTER_per_request;
# and defines
#   start_server NAME [ARGS...]  starts a server (moonport-stats: moonport
#                  with ARGS) on SERVER_CPU and sets PORT[NAME];
#   scenario_path SCENARIO      the request path;
# and may redefine scenario_connections, scenario_depth and
# scenario_servers (below).

declare -A PORT=()

# scenario_connections SCENARIO: wrk's connections; CONNECTIONS unless
# redefined.
scenario_connections() { echo "$CONNECTIONS"; }

# scenario_depth SCENARIO: requests per write; 1 unless redefined.
scenario_depth() { echo 1; }

# scenario_servers SCENARIO: the servers that run it; all unless
# redefined.
scenario_servers() { echo "${SERVERS[*]}"; }

# peer_csv_columns: the CSV header of the measured runs.
peer_csv_columns() {
  local extra=${COUNTER:+,${COUNTER}_per_request}
  echo "scenario,round,position,server,connections,pipeline,duration_s,requests,rps,p50_us,p99_us,errors_connect,errors_read,errors_write,errors_status,errors_timeout,server_cpu_us_per_request,${UPSTREAM}_cpu_us_per_request$extra,server_core_busy_pct,wrk_core_busy_pct,server_cpu_pct,wrk_cpu_pct,${UPSTREAM}_cpu_pct,other_cpu_pct"
}

# launch_moonport NAME APP [ARGS...]: build-bench/moonport serving APP on
# CPU SERVER_CPU, its output in $WORK/logs/NAME.log; sets STARTED_PID[NAME]
# and LAUNCHED_PORT (read from its startup line). Environment variables the
# app reads go before the call.
launch_moonport() {
  local name=$1 app=$2 log=$WORK/logs/$1.log
  shift 2
  taskset -c "$SERVER_CPU" "$ROOT/build-bench/moonport" --listen 127.0.0.1:0 "$@" "$app" \
    >"$log" 2>&1 </dev/null &
  STARTED_PID[$name]=$!
  LAUNCHED_PORT=$(moonport_port "$log" "$!") || { cat "$log" >&2; die "$name did not start"; }
}

# launch_nginx NAME CONF [KEY=VALUE...]: nginx on CPU SERVER_CPU and a free
# port, with CONF filled in (nginx_prefix: @PREFIX@, @PORT@ and each
# @KEY@); sets STARTED_PID[NAME] and LAUNCHED_PORT.
launch_nginx() {
  local name=$1 conf=$2 prefix
  shift 2
  LAUNCHED_PORT=$(free_port)
  prefix=$(nginx_prefix "$name" "$LAUNCHED_PORT" "$conf" "$@")
  taskset -c "$SERVER_CPU" nginx -p "$prefix/" -c "$prefix/nginx.conf" -e "$prefix/error.log" \
    >"$WORK/logs/$name.log" 2>&1 </dev/null &
  STARTED_PID[$name]=$!
}

# await_server NAME PORT PATH: waits (30 s at most) until NAME answers GET
# PATH with 200, or stops the run with the end of its logs; sets
# PORT[NAME].
await_server() {
  local name=$1 port=$2 path=$3
  "$PY" "$BENCH_DIR/lib/probe.py" wait "$port" "$path" --pid "${STARTED_PID[$name]}" --timeout 30 \
    || { tail -n 20 "$WORK/logs/$name.log" "$WORK/$name"-*/error.log 2>/dev/null >&2
         die "$name did not answer GET $path (log above)"; }
  PORT[$name]=$port
}

# upstream_connections NAME: established connections from NAME's process
# tree to UPSTREAM_PORT now.
upstream_connections() {
  local pids p n=0
  pids=("${STARTED_PID[$1]}")
  mapfile -t -O 1 pids < <(pgrep -P "${STARTED_PID[$1]}" || true)
  for p in "${pids[@]}"; do
    n=$((n + $(ss -Htnp state established "( dport = :$UPSTREAM_PORT )" | grep -c "pid=$p," || true)))
  done
  echo "$n"
}

# peer_measure SCENARIO ROUND POSITION SERVER: one measured wrk run;
# appends its CSV row to $CSV and prints "RPS req/s CPU µs/req", and the
# errors when there were any.
# requests, rps and the figures per request count 2xx answers only: a
# server that fails requests fast must not gain by it (wrk's non-2xx count
# is in errors_status).
peer_measure() {
  local scenario=$1 round=$2 position=$3 server=$4 pid conns depth line errors=0
  local t0 t1 c0 c1 s0 s1 u0 u1 q0=0 q1=0 fields key figs sampler=""
  pid=${STARTED_PID[$server]}
  conns=$(scenario_connections "$scenario") depth=$(scenario_depth "$scenario")
  if ((round == ROUNDS)); then # the pool, in the middle of the last run
    (taskset -cp "$WRK_CPU" "$BASHPID" >/dev/null # off the server's core
      sleep "$(awk -v d="$DURATION" 'BEGIN { print d / 2 }')"
      printf '%s\t%s\t%s\n' "$scenario" "$server" "$(upstream_connections "$server")" \
        >>"$WORK/upstream.tsv") &
    sampler=$!
  fi
  # The processes' ticks are read just outside the cores' window, which
  # holds the wrk run alone; neither the server nor the upstream works
  # between.
  [[ -z ${COUNTER:-} ]] || q0=$(run_counter)
  read -r s0 u0 < <(trees_ticks "$pid" "$UPSTREAM_PID")
  t0=$EPOCHREALTIME c0=$(cpu_sample)
  line=$(run_wrk "${PORT[$server]}" "$(scenario_path "$scenario")" "$conns" "$depth" "$DURATION") \
    || die "wrk failed against $server in $scenario round $round (output above)"
  c1=$(cpu_sample) t1=$EPOCHREALTIME
  read -r s1 u1 < <(trees_ticks "$pid" "$UPSTREAM_PID")
  [[ -z $sampler ]] || wait "$sampler"
  [[ -z ${COUNTER:-} ]] || q1=$(run_counter)
  kill -0 "$pid" 2>/dev/null || { tail -n 20 "$WORK/logs/$server.log" >&2; die "$server died"; }
  kill -0 "$UPSTREAM_PID" 2>/dev/null \
    || { tail -n 20 "$UPSTREAM_LOG" >&2; die "the upstream ($UPSTREAM) died"; }
  # duration requests rps server_us upstream_us [counter] core0 core1
  # server wrk upstream other
  read -r -a figs < <(awk -v n="$(result_field "$line" requests)" \
    -v bad="$(result_field "$line" status)" \
    -v us="$(result_field "$line" duration_us)" -v s=$((s1 - s0)) -v u=$((u1 - u0)) \
    -v q=$((q1 - q0)) -v counter="${COUNTER:+1}" -v w="$(result_field "$line" wrk_ticks)" \
    -v wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
    -v before="$c0" -v after="$c1" -v hz="$CLK_TCK" 'BEGIN {
      split(before, x); split(after, y)
      f = 100 / (wall * hz)
      if (u < 0) u = 0
      other = (y[3] - x[3]) - s - u - w; if (other < 0) other = 0
      other += y[4] - x[4]
      n -= bad
      if (n <= 0) n = 1e-9
      printf "%.3f %d %.1f %.2f %.2f", us / 1e6, n, n / (us / 1e6), s / hz * 1e6 / n, u / hz * 1e6 / n
      if (counter) printf " %.3f", q / n
      printf " %.0f %.0f %.0f %.0f %.0f %.0f\n", (y[1] - x[1]) * f, (y[2] - x[2]) * f,
        s * f, w * f, u * f, other * f }')
  fields=("$scenario" "$round" "$position" "$server" "$conns" "$depth" "${figs[@]:0:3}")
  for key in p50_us p99_us connect read write status timeout; do
    fields+=("$(result_field "$line" "$key")")
  done
  fields+=("${figs[@]:3}")
  (IFS=,; echo "${fields[*]}") >>"$CSV"
  for key in connect read write status timeout; do
    errors=$((errors + $(result_field "$line" "$key")))
  done
  if ((errors)); then errors=" ($errors errors)"; else errors=""; fi
  echo "${figs[2]} req/s ${figs[3]} µs/req$errors"
}

# peer_scenario SCENARIO: a warm-up run per server that runs it, then
# ROUNDS rounds.
peer_scenario() {
  local scenario=$1 server conns depth shape servers
  read -r -a servers <<<"$(scenario_servers "$scenario")"
  conns=$(scenario_connections "$scenario") depth=$(scenario_depth "$scenario")
  shape="$conns connections"
  ((depth == 1)) || shape+=", $depth pipelined"
  log "scenario $scenario: GET $(scenario_path "$scenario"), $shape;" \
    "$ROUNDS rounds of $DURATION s after a $WARMUP s warm-up"
  for server in "${servers[@]}"; do
    run_wrk "${PORT[$server]}" "$(scenario_path "$scenario")" "$conns" "$depth" "$WARMUP" >/dev/null \
      || die "wrk failed warming up $server"
  done
  interleave "$scenario" peer_measure "${servers[@]}"
}

# peer_scenarios SCENARIO...: the CSV ($WORK/NAME.csv, NAME the
# benchmark's folder; sets CSV) and every scenario; then the servers' error
# lines: a warning, and the first three of each in $WORK/log_errors.tsv
# (SERVER TAB LINE) for the report.
peer_scenarios() {
  local scenario server
  CSV=$WORK/$(basename "$HERE").csv
  peer_csv_columns >"$CSV"
  for scenario in "$@"; do peer_scenario "$scenario"; done
  : >"$WORK/log_errors.tsv"
  for server in "${SERVERS[@]}"; do
    warn_log_errors "$server"
    grep -h -E '\[(emerg|alert|crit|error)\]|Traceback|Error:' \
      "$WORK/logs/$server.log" "$WORK/$server"-*/error.log 2>/dev/null \
      | sed -E 's|^[0-9TZ:/ -]+ ||' | head -n 3 | sed "s/^/$server\t/" >>"$WORK/log_errors.tsv" || true
  done
}

# peer_allocation PATH...: bytes allocated per request on each path's
# route ("GET /path", the query left out), Lua and C, from a moonport
# started with --stats (start_server moonport-stats), around a wrk run of
# DURATION s over CONNECTIONS connections per path, after a warm-up run;
# REPORT_PY's alloc lines in $WORK/alloc.txt.
peer_allocation() {
  local path
  start_server moonport-stats --stats
  : >"$WORK/alloc.txt"
  for path in "$@"; do
    run_wrk "${PORT[moonport-stats]}" "$path" "$CONNECTIONS" 1 "$WARMUP" >/dev/null \
      || die "wrk failed warming up moonport-stats"
    "$PY" "$REPORT_PY" alloc "${PORT[moonport-stats]}" "GET ${path%%\?*}" -- \
      taskset -c "$WRK_CPU" wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" \
        "http://127.0.0.1:${PORT[moonport-stats]}$path" >>"$WORK/alloc.txt" \
      || die "measuring allocation on $path failed"
  done
  stop_pid "${STARTED_PID[moonport-stats]}"
  unset "STARTED_PID[moonport-stats]"
  log "allocation: $(tr '\n' ';' <"$WORK/alloc.txt")"
}

# write_peer_meta [KEY VALUE]...: $WORK/meta.tsv for the report: the date,
# the command line, the machine, moonport's build, the KEY VALUE pairs
# given (the peers' versions), wrk's version and the run's settings.
write_peer_meta() {
  {
    printf 'date\t%s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
    printf 'command\t%s\n' "$COMMAND_LINE"
    printf 'cpu\t%s\n' "$(cpu_model)"
    printf 'kernel\t%s\n' "$(uname -r)"
    printf 'moonport\t%s\n' "$MOONPORT_BUILT"
    while (($# >= 2)); do
      printf '%s\t%s\n' "$1" "$2"
      shift 2
    done
    printf 'wrk\t%s\n' "$(dpkg_version wrk)"
    printf 'rounds\t%s\n' "$ROUNDS"
    printf 'duration\t%s\n' "$DURATION"
    printf 'warmup\t%s\n' "$WARMUP"
    printf 'connections\t%s\n' "$CONNECTIONS"
    printf 'run_time\t%s\n' "$(($(date +%s) - STARTED_AT))"
  } >"$WORK/meta.tsv"
}

# peer_report MD: REPORT_PY's report from the CSV into $WORK/MD.
peer_report() {
  "$PY" "$REPORT_PY" report --work "$WORK" --csv "$CSV" --out "$WORK/$1" \
    || die "writing the report failed"
}

# peer_publish TITLE FILE...: copies FILEs from $WORK into the benchmark's
# folder, the first being the Markdown section TITLE, which then replaces
# its namesake in bench/RESULTS.md (bench/lib/splice.py).
peer_publish() {
  local title=$1 file
  shift
  for file in "$@"; do cp "$WORK/$file" "$HERE/$file"; done
  "$PY" "$BENCH_DIR/lib/splice.py" "$BENCH_DIR/RESULTS.md" "$title" "$HERE/$1"
  log "done: ${HERE#"$ROOT"/}/{$(IFS=,; echo "$*")}, bench/RESULTS.md"
}
