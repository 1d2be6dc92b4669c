# Resident memory: idle, and with many idle keep-alive connections. Sourced.
#
# A fresh instance answers 100 requests on one connection, which then
# closes: its VmRSS is the idle figure. bench/lib/idle_conns.py then opens
# CONNECTIONS keep-alive connections, each sending one GET /users/42 and
# reading its answer before going idle, and VmRSS is read again; the growth
# divided by CONNECTIONS is the cost of one idle connection. moonport runs
# scripts/api.lua. For nginx the figures are the master and its worker
# together.

# raise_fd_limit COUNT: make room for COUNT connections in this shell (and
# so in the servers it starts), or fail.
raise_fd_limit() {
  local need=$(($1 + 200)) hard
  (($(ulimit -Sn) >= need)) && return 0
  hard=$(ulimit -Hn)
  if [[ $hard == unlimited ]] || ((hard >= need)); then
    ulimit -Sn "$need"
  else
    ulimit -n "$need" 2>/dev/null  # above the hard limit: root only
  fi
  (($(ulimit -Sn) >= need))
}

# measure_memory SERVER CONNECTIONS: appends
# "SERVER idle_kb=.. open_kb=.. closed_kb=.. count=.. still_open=.." to
# $WORK/memory.txt.
measure_memory() {
  local server=$1 count=$2 inst line
  inst=$(instance_of "$server" users)
  start_instance "$inst"
  line=$("$PY" "$BENCH_DIR/lib/idle_conns.py" "${INSTANCE_PORT[$inst]}" /users/42 \
    --pid "${STARTED_PID[$inst]}" --count "$count") \
    || { stop_instance "$inst"; die "memory measurement failed for $server"; }
  stop_instance "$inst"
  warn_log_errors "$inst"
  log "memory $server: $line"
  echo "$server $line" >>"$WORK/memory.txt"
}
