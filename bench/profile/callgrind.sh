#!/usr/bin/env bash
# Instructions per request, counted by callgrind: moonport and OpenResty
# serving GET /hello and GET /users/42, each run twice (N1 and N2 requests
# over 32 keep-alive connections) so that startup cancels out:
#   per request = (Ir(N2) - Ir(N1)) / (N2 - N1)
# Prints a table, and the top functions of each N2 run.
#
# usage: bench/profile/callgrind.sh [N1 N2]   (default 3200 9600)
# Needs valgrind, nginx-light, libnginx-mod-http-lua, lua-resty-core.
set -euo pipefail
cd "$(dirname "$0")/../.."
N1=${1:-3200}
N2=${2:-9600}
OUT=${OUT:-$(mktemp -d)}
CLIENT=bench/profile/client.py

cmake -B build-prof -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g -DNDEBUG" -DBUILD_TESTING=OFF >/dev/null
cmake --build build-prof -j"$(nproc)" >/dev/null

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_http PORT PATH: polls until the server answers.
wait_http() {
  for _ in $(seq 600); do
    if python3 - "$1" "$2" <<'PY' 2>/dev/null; then return 0; fi
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)
s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % sys.argv[2].encode())
sys.exit(0 if s.recv(12).startswith(b"HTTP/1.1") else 1)
PY
    sleep 0.05
  done
  echo "server on port $1 did not answer" >&2
  return 1
}

# run SERVER PATH N: total instructions for N requests; leaves the profile
# in $OUT/SERVER-PATH-N.out.
run() {
  local server=$1 path=$2 n=$3 port pid prof
  port=$(free_port)
  prof=$OUT/$server-${path//\//_}-$n.out
  case $server in
    moonport)
      local app=scripts/api.lua
      [[ $path == /hello ]] && app=scripts/hello.lua
      valgrind --tool=callgrind --callgrind-out-file="$prof" \
        build-prof/moonport --listen "127.0.0.1:$port" "$app" >/dev/null 2>"$OUT/vg.log" &
      ;;
    openresty)
      local prefix=$OUT/openresty-$port
      mkdir -p "$prefix/tmp"
      sed -e "s|@PREFIX@|$prefix|g" -e "s|@PORT@|$port|g" \
        bench/peers/openresty.conf >"$prefix/nginx.conf"
      valgrind --tool=callgrind --callgrind-out-file="$prof" \
        nginx -p "$prefix" -c "$prefix/nginx.conf" -g "master_process off;" \
        >/dev/null 2>"$OUT/vg.log" &
      ;;
  esac
  pid=$!
  wait_http "$port" "$path"
  python3 "$CLIENT" "$port" "$path" "$n" 32
  if [[ $server == openresty ]]; then kill -QUIT "$pid"; else kill -TERM "$pid"; fi
  wait "$pid" || true
  awk '/^(summary|totals):/ {print $2; exit}' "$prof"
}

printf '| server | route | instructions per request |\n| --- | --- | --- |\n'
for path in /hello /users/42; do
  for server in moonport openresty; do
    a=$(run "$server" "$path" "$N1")
    b=$(run "$server" "$path" "$N2")
    printf '| %s | `GET %s` | %d |\n' "$server" "$path" $(((b - a) / (N2 - N1)))
  done
done

for f in "$OUT"/*-"$N2".out; do
  echo
  echo "## $(basename "$f" .out): top functions (self)"
  callgrind_annotate --inclusive=no "$f" 2>/dev/null |
    awk '/^-+$/ {n++} n >= 3 && /[0-9]/ {print}' | head -15 || true
done
