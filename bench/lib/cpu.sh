# CPU time accounting around each wrk run, in clock ticks. Sourced.
#
# Each measured run gets five figures, in percent of one CPU over the run:
#   server_core_busy  CPU 0 busy (processes, interrupts, softirqs): near
#                     100, the server's core was the limit;
#   wrk_core_busy     CPU 1 busy: near 100 while the server's core is not,
#                     the load generator was the limit;
#   server_cpu, wrk_cpu  the processes' own user + system time (loopback
#                     networking runs partly in softirqs, counted in the
#                     core figures only);
#   other_cpu         every other process on the machine, plus time the
#                     hypervisor gave to other guests (steal): the noise.

CLK_TCK=$(getconf CLK_TCK)

# cpu_sample: "SERVER_CORE_BUSY WRK_CORE_BUSY ALL_PROCESSES STEAL" so far.
cpu_sample() {
  awk -v a="cpu$SERVER_CPU" -v b="cpu$WRK_CPU" '
    # user nice system idle iowait irq softirq steal ...
    $1 == "cpu" { procs = $2 + $3 + $4; steal = $9 }
    $1 == a { busy_a = $2 + $3 + $4 + $7 + $8 }
    $1 == b { busy_b = $2 + $3 + $4 + $7 + $8 }
    END { print busy_a, busy_b, procs, steal }' /proc/stat
}

# tree_ticks PID: user + system time of PID and its descendants so far
# (nginx: master and worker).
tree_ticks() {
  local pid total=0 todo=("$1") rest
  while ((${#todo[@]})); do
    pid=${todo[0]}
    todo=("${todo[@]:1}")
    if rest=$(cat "/proc/$pid/stat" 2>/dev/null); then
      # Fields after the command name, which may hold spaces: state is the
      # first, utime the 12th, stime the 13th.
      read -r -a rest <<<"${rest##*) }"
      total=$((total + rest[11] + rest[12]))
    fi
    mapfile -t -O "${#todo[@]}" todo < <(pgrep -P "$pid" || true)
  done
  echo "$total"
}

# trees_ticks PID...: for each PID, the user + system ticks of it and its
# descendants so far, on one line; one pass over /proc (PostgreSQL has a
# process per connection: FastAPI's pool makes over a hundred).
trees_ticks() {
  cat /proc/[0-9]*/stat 2>/dev/null | awk -v roots="$*" '
    {
      pid = $1; rest = $0
      sub(/^.*\) /, "", rest) # after the command name, which may hold spaces
      split(rest, f, " ")
      parent[pid] = f[2]; ticks[pid] = f[12] + f[13]
    }
    END {
      n = split(roots, r, " ")
      for (pid in ticks)
        for (p = pid; p != "" && p != 0; p = parent[p])
          for (i = 1; i <= n; i++) if (p == r[i]) sum[i] += ticks[pid]
      for (i = 1; i <= n; i++) printf "%d%s", sum[i], (i < n ? " " : "\n")
    }'
}

# times_ticks "USERmS.SSSs SYSmS.SSSs": bash's `times` children line in ticks.
times_ticks() {
  awk -v hz="$CLK_TCK" '{
    t = 0
    for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); t += p[1] * 60 + p[2] }
    printf "%d", t * hz + 0.5 }' <<<"$1"
}

# cpu_shares SECONDS "SAMPLE_BEFORE" "SAMPLE_AFTER" SERVER_TICKS WRK_TICKS:
# prints "SERVER_CORE_BUSY WRK_CORE_BUSY SERVER_CPU WRK_CPU OTHER_CPU" (%).
cpu_shares() {
  awk -v s="$1" -v before="$2" -v after="$3" -v srv="$4" -v w="$5" -v hz="$CLK_TCK" 'BEGIN {
    split(before, x); split(after, y)
    f = 100 / (s * hz)
    other = (y[3] - x[3]) - srv - w; if (other < 0) other = 0
    other += y[4] - x[4]
    printf "%.0f %.0f %.0f %.0f %.0f", (y[1] - x[1]) * f, (y[2] - x[2]) * f,
      srv * f, w * f, other * f }'
}
