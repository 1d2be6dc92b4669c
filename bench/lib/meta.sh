# What a result depends on: the machine, the versions, the settings. Sourced.

# dpkg_version PACKAGE: its Debian version, without the epoch.
dpkg_version() {
  local v
  v=$(dpkg-query -W -f='${Version}' "$1" 2>/dev/null) || v="?"
  echo "${v#*:}"
}

# uvicorn picks uvloop and httptools when they are importable, else asyncio
# and h11: say which this machine gives it.
uvicorn_stack() {
  "$PY" - <<'PY'
import importlib.util as u
import sys
import fastapi, starlette, uvicorn
loop = "uvloop" if u.find_spec("uvloop") else "asyncio"
http = "httptools" if u.find_spec("httptools") else "h11"
print(f"FastAPI {fastapi.__version__}, Starlette {starlette.__version__}, "
      f"uvicorn {uvicorn.__version__} ({loop} loop, {http} parser), "
      f"Python {sys.version.split()[0]}")
PY
}

# moonport_version: the built binary's version, the commit it was built
# from, and whether the sources it uses differed from that commit.
moonport_version() {
  local v rev dirty=""
  v=$("$ROOT/build-bench/moonport" --version 2>&1 | head -n1)
  rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?")
  [[ -z $(git -C "$ROOT" status --porcelain -- server lua scripts CMakeLists.txt 2>/dev/null) ]] \
    || dirty=" with uncommitted changes"
  echo "$v, commit $rev$dirty, Release build"
}

cpu_model() {
  local name family model hyper
  name=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1)
  family=$(lscpu | sed -n 's/^CPU family:[[:space:]]*//p' | head -n1)
  model=$(lscpu | sed -n 's/^Model:[[:space:]]*//p' | head -n1)
  hyper=$(lscpu | sed -n 's/^Hypervisor vendor:[[:space:]]*//p' | head -n1)
  echo "$name (family $family, model $model), $(nproc) CPUs${hyper:+, $hyper guest}"
}

# server_version SERVER: what was measured, with versions.
server_version() {
  local nginx_v
  nginx_v=$(nginx -v 2>&1 | sed 's|.*nginx/||')
  case $1 in
    moonport) echo "$MOONPORT_BUILT" ;;
    openresty)
      echo "nginx $nginx_v (nginx-light), lua-nginx-module $(dpkg_version libnginx-mod-http-lua)," \
        "lua-resty-core $(dpkg_version lua-resty-core), LuaJIT $(dpkg_version libluajit2-5.1-2)," \
        "lua-cjson $(dpkg_version lua-cjson)" ;;
    nginx-static) echo "nginx $nginx_v (nginx-light), \`return 200\` from the configuration" ;;
    node) echo "Node.js $(node --version), http module" ;;
    fastapi) uvicorn_stack ;;
  esac
}

# write_meta FILE: one "key TAB value" line per fact, in report order.
write_meta() {
  local server
  {
    printf 'date\t%s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
    printf 'command\t`%s`\n' "$COMMAND_LINE"
    printf 'CPU\t%s\n' "$(cpu_model)"
    printf 'kernel\t%s\n' "$(uname -r)"
    printf 'OS\t%s\n' "$(. /etc/os-release && echo "$PRETTY_NAME")"
    for server in "${SERVERS[@]}"; do
      printf '%s\t%s\n' "$server" "$(server_version "$server")"
    done
    printf 'load generator\twrk %s, 1 thread, pinned to CPU %s\n' "$(dpkg_version wrk)" "$WRK_CPU"
    printf 'servers\tone process each (nginx: a master and 1 worker), pinned to CPU %s, on 127.0.0.1\n' \
      "$SERVER_CPU"
    printf 'rounds\t%s per scenario, %s s each, servers interleaved, after a %s s warm-up run per server\n' \
      "$ROUNDS" "$DURATION" "$WARMUP"
    printf 'run time\t%s s\n' "$(($(date +%s) - STARTED_AT))"
  } >"$1"
}
