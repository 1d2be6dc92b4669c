# The servers under test: how each is started, checked and stopped. Sourced.
#
# A server is what the tables name (moonport, openresty, nginx-static, node,
# fastapi). An instance is one running process of it: moonport runs one
# instance per example app (moonport-hello for /hello, moonport-api for
# /users/:id); every peer serves both routes from one instance.
#
# Every instance is pinned to CPU 0 and listens on 127.0.0.1 only.

ALL_SERVERS=(moonport openresty nginx-static node fastapi)
SERVER_CPU=0

declare -A INSTANCE_PORT=()

# instance_of SERVER ROUTE: the instance that serves ROUTE (hello or users).
instance_of() {
  if [[ $1 == moonport ]]; then
    case $2 in
      hello) echo moonport-hello ;;
      users) echo moonport-api ;;
    esac
  else
    echo "$1"
  fi
}

# instance_routes INSTANCE: the routes its answers are checked on.
instance_routes() {
  case $1 in
    moonport-hello) echo hello ;;
    moonport-api) echo users ;;
    *) echo hello users ;;
  esac
}

# route_path ROUTE: the request path measured for a route.
route_path() {
  case $1 in
    hello) echo /hello ;;
    users) echo /users/42 ;;
  esac
}

# nginx_prefix INSTANCE PORT [CONF [KEY=VALUE...]]: a private nginx prefix
# with CONF (default bench/peers/INSTANCE.conf) for PORT, its @PREFIX@ and
# @PORT@ filled in, and each @KEY@ given; prints its path. /etc/nginx is
# never read.
nginx_prefix() {
  local prefix=$WORK/$1-$2 conf=${3:-$BENCH_DIR/peers/$1.conf} kv subst
  subst=(-e "s|@PREFIX@|$prefix|g" -e "s|@PORT@|$2|g")
  for kv in "${@:4}"; do subst+=(-e "s|@${kv%%=*}@|${kv#*=}|g"); done
  mkdir -p "$prefix/tmp"
  sed "${subst[@]}" "$conf" >"$prefix/nginx.conf"
  echo "$prefix"
}

# server_command INSTANCE PORT: sets CMD to the instance's command line,
# listening on 127.0.0.1:PORT (PORT 0: moonport picks one and says which).
server_command() {
  local prefix
  case $1 in
    moonport-hello | moonport-api)
      local app=scripts/${1#moonport-}.lua
      CMD=("$ROOT/build-bench/moonport" --listen "127.0.0.1:$2" "$app") ;;
    openresty | nginx-static)
      prefix=$(nginx_prefix "$1" "$2")
      CMD=(nginx -p "$prefix/" -c "$prefix/nginx.conf" -e "$prefix/error.log") ;;
    node)
      CMD=(node "$BENCH_DIR/peers/node.js" "$2") ;;
    fastapi)
      # uvicorn closes idle keep-alive connections after 5 s by default; the
      # memory benchmark keeps them longer, like the other servers.
      CMD=("$PY" -m uvicorn --app-dir "$BENCH_DIR/peers" fastapi_app:app
        --host 127.0.0.1 --port "$2" --log-level warning --no-access-log
        --timeout-keep-alive 75) ;;
    *) die "unknown server instance: $1" ;;
  esac
}

# moonport_port LOG PID: wait (at most 10 s) for moonport's startup line
# "moonport VERSION listening on http://HOST:PORT (...)" and print PORT.
moonport_port() {
  local log=$1 pid=$2 i line
  for ((i = 0; i < 200; i++)); do
    line=$(grep -m1 '^moonport .* listening on http://' "$log" 2>/dev/null) && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  [[ -n $line ]] || return 1
  sed -E 's|.*listening on http://[^ ]*:([0-9]+).*|\1|' <<<"$line"
}

# start_instance INSTANCE: start it pinned to CPU 0 and wait until it
# answers; sets INSTANCE_PORT[INSTANCE] and STARTED_PID[INSTANCE].
start_instance() {
  local name=$1 port pid log=$WORK/logs/$1.log routes
  read -r -a routes <<<"$(instance_routes "$name")"
  if [[ $name == moonport-* ]]; then
    port=0
  else
    port=$(free_port)
  fi
  server_command "$name" "$port"
  taskset -c "$SERVER_CPU" "${CMD[@]}" >"$log" 2>&1 </dev/null &
  pid=$!
  STARTED_PID[$name]=$pid
  if [[ $name == moonport-* ]]; then
    port=$(moonport_port "$log" "$pid") \
      || { cat "$log" >&2; die "$name printed no startup line (log above)"; }
  fi
  "$PY" "$BENCH_DIR/lib/probe.py" wait "$port" "$(route_path "${routes[0]}")" \
    --pid "$pid" --timeout 30 \
    || { tail -n 20 "$log" "$WORK"/"$name"-*/error.log 2>/dev/null >&2
         die "$name did not start (log above)"; }
  INSTANCE_PORT[$name]=$port
}

# check_instance INSTANCE: abort unless its answers are right.
check_instance() {
  local name=$1 routes
  read -r -a routes <<<"$(instance_routes "$name")"
  log "checking $name on 127.0.0.1:${INSTANCE_PORT[$name]}"
  "$PY" "$BENCH_DIR/lib/check.py" "${INSTANCE_PORT[$name]}" "${routes[@]}" >&2 \
    || die "$name answers wrongly (above); nothing was measured against it"
}

# instance_alive INSTANCE: whether its process still runs.
instance_alive() {
  local pid=${STARTED_PID[$1]:-}
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null
}

# stop_instance INSTANCE
stop_instance() {
  [[ -n ${STARTED_PID[$1]:-} ]] || return 0
  stop_pid "${STARTED_PID[$1]}"
  unset "STARTED_PID[$1]" "INSTANCE_PORT[$1]"
}

# warn_log_errors INSTANCE: show error lines the instance logged (its
# output, and nginx's error log), so that a figure taken while a server was
# failing does not pass unnoticed.
warn_log_errors() {
  local name=$1 found
  found=$(grep -h -E '\[(emerg|alert|crit|error)\]|Traceback|Error:' \
    "$WORK/logs/$name.log" "$WORK/$name"-*/error.log 2>/dev/null | head -n 5) || true
  [[ -z $found ]] || log "warning: $name logged errors (first lines):"$'\n'"$found"
}
