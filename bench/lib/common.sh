# Shared by every part of bench/run: messages, the scratch directory, and
# the processes the run starts (each is stopped on exit, whatever happens).
# Sourced, not run.

PY=/usr/bin/python3

log() { printf 'bench: %s\n' "$*" >&2; }
die() { printf 'bench: error: %s\n' "$*" >&2; exit 1; }

# Every server process started, by instance name -> pid.
declare -A STARTED_PID=()

# stop_pid PID: TERM, up to 5 s to exit, then KILL. Only for processes this
# run started.
stop_pid() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local name
  for name in "${!STARTED_PID[@]}"; do
    stop_pid "${STARTED_PID[$name]}"
  done
  [[ -n ${WORK:-} && -d $WORK ]] && rm -rf "$WORK"
}

# make_workdir: a private scratch directory, removed on exit.
make_workdir() {
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/moonport-bench.XXXXXX")
  mkdir -p "$WORK/logs"
  # Workers that drop privileges (nginx's) write into their own prefix.
  chmod 755 "$WORK"
}

# free_port: a TCP port on 127.0.0.1 that nothing listens on right now.
free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# median VALUES...: the median of numbers (mean of the middle two for an
# even count).
median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) exit 1
    if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
