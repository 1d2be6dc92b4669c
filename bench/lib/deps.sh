# Installing what the benchmark needs and building moonport. Sourced.

BENCH_PACKAGES=(wrk nginx-light libnginx-mod-http-lua lua-resty-core lua-cjson
  nodejs python3-fastapi python3-uvicorn gnuplot-nox curl)

# install_deps: apt-get install whatever is missing; nothing when all is
# there, so a rerun goes straight to the build.
install_deps() {
  local wanted missing=() pkg
  mapfile -t wanted < <(grep -v '^\s*#' "$ROOT/.ci/packages-build" | tr -s ' \t' '\n' | sed '/^$/d')
  wanted+=("${BENCH_PACKAGES[@]}")
  for pkg in "${wanted[@]}"; do
    [[ $(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null) == "install ok installed" ]] \
      || missing+=("$pkg")
  done
  if ((${#missing[@]} == 0)); then
    log "packages: all present"
    return
  fi
  log "packages: installing ${missing[*]}"
  local sudo=()
  ((EUID == 0)) || sudo=(sudo)
  if ! "${sudo[@]}" apt-get update -q \
    || ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends "${missing[@]}"; then
    die "apt-get could not install: ${missing[*]}"
  fi
}

# build_moonport: a Release build in build-bench/, tests off. On failure the
# end of the compiler's output is shown.
build_moonport() {
  local out=$WORK/logs/build.log
  log "building moonport (Release) in build-bench/"
  { cmake -S "$ROOT" -B "$ROOT/build-bench" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
      && cmake --build "$ROOT/build-bench" -j "$(nproc)"; } >"$out" 2>&1 \
    || { tail -n 30 "$out" >&2; die "building moonport failed (output above)"; }
  [[ -x $ROOT/build-bench/moonport ]] || die "build-bench/moonport was not built"
  # Taken now: others may commit while the run goes on.
  MOONPORT_BUILT=$(moonport_version)
}
