# Time from process start to the first answered request. Sourced.
#
# bench/lib/probe.py starts the server pinned to CPU 0, retries
# connect + GET /users/42 every half millisecond, and stops it after the first
# 200; the wall time counts from just before the exec. moonport runs
# scripts/api.lua.

# measure_startup SERVER RUNS: appends "SERVER MS,MS,..." to $WORK/startup.txt.
measure_startup() {
  local server=$1 runs=$2 inst port line
  inst=$(instance_of "$server" users)
  port=$(free_port)
  server_command "$inst" "$port"
  line=$("$PY" "$BENCH_DIR/lib/probe.py" startup "$port" /users/42 \
    --runs "$runs" --cpu "$SERVER_CPU" --timeout 30 -- "${CMD[@]}") \
    || die "startup measurement failed for $server"
  log "startup $server: ${line#startup_ms=} ms"
  echo "$server ${line#startup_ms=}" >>"$WORK/startup.txt"
}
