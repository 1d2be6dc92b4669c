#!/usr/bin/python3
"""bench/redis/run's helpers.

  redis.py check PORT
      Checks a server's answers before anything is measured: GET /get is
      user:1's value, GET /pipeline the ten values joined by newlines.

  redis.py alloc PORT ROUTE -- LOAD_COMMAND...
      Reads moonport's stats endpoint (--stats), runs LOAD_COMMAND (wrk),
      reads it again and prints, for ROUTE ("GET /get"):
      "ROUTE lua=<mean Lua bytes> c=<mean C bytes> requests=N mallocs=M"
      (M: the worker's malloc calls meanwhile, the stats requests' own
      included).

  redis.py report --work DIR --csv CSV --out REDIS.md
      The section for bench/RESULTS.md from the per-run CSV, DIR/meta.tsv,
      DIR/upstream.tsv and DIR/alloc.txt; the chart's data as
      DIR/chart.dat."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from peer_report import (alloc_section, detail_table, finish, fmt_int, get,  # noqa: E402
                         heading, main, median_of, pools, read_runs, read_tsv,
                         star as peer_star)

SCENARIOS = {
    "get": "one GET per request",
    "pipeline": "a pipeline of 10 GETs per request",
}
SERVERS = ["moonport", "openresty"]
LABEL = {"moonport": "moonport", "openresty": "OpenResty"}
# The targets of the issue, for the one-GET handler.
TARGET_RPS = 1.2
TARGET_CPU = 0.8
# The budget spec/integration/alloc_spec.lua holds GET /get to.
LUA_BUDGET = 1024
# The per-server table's columns after the requests per second: (title,
# CSV key, divisor, decimals).
DETAIL = [("p50 ms", "p50_us", 1000, 3), ("p99 ms", "p99_us", 1000, 3),
          ("server CPU µs/req", "server_cpu_us_per_request", 1, 2),
          ("Redis CPU µs/req", "redis_cpu_us_per_request", 1, 2),
          ("CPU 0 busy %", "server_core_busy_pct", 1, 0),
          ("CPU 1 busy %", "wrk_core_busy_pct", 1, 0), ("other load %", "other_cpu_pct", 1, 0)]


def value(i):
    return '{"id":%d,"name":"user-%d"}' % (i, i)


def check(port):
    expected = {"/get": value(1), "/pipeline": "\n".join(value(i) for i in range(1, 11))}
    ok = True
    for path, body in expected.items():
        response = get(port, path)
        got = response.body.decode("utf-8", "replace")
        if response.status != 200 or got != body:
            print(f"GET {path}: {response.status} {got!r}, expected 200 {body!r}", file=sys.stderr)
            ok = False
    return 0 if ok else 1










def report(work, csv_path, out_path):
    meta = read_tsv(os.path.join(work, "meta.tsv"))
    by, upstream = read_runs(work, csv_path)

    def med(scenario, server, key):
        return median_of(by, scenario, server, key)

    def star(scenario, server):
        return peer_star(by, scenario, server)

    scenarios = [s for s in SCENARIOS if (s, "moonport") in by]
    lines = heading("Redis through lua-resty-redis", meta)
    w = lines.append
    w(f"moonport: {meta['moonport']}. OpenResty: {meta['openresty']}. "
      f"Library: {meta['redis_lua']}, module `nginx.redis`, the same file for both, "
      f"unmodified. Redis {meta['redis']}; wrk {meta['wrk']}.")
    w("")
    w(f"The handlers ([app.lua](redis/app.lua), [nginx.conf](redis/nginx.conf)): `redis:new()`, "
      "`set_timeout(1000)`, `connect` (a pooled connection when there is one), then `get(\"user:1\")` "
      "(**get**) or `init_pipeline`, ten `get`s and `commit_pipeline` (**pipeline**), "
      "`set_keepalive(10000, 100)`, and the value(s) as the body (OpenResty with `ngx.print`, "
      "chunked, as in bench/peers/openresty.conf; moonport with `res:send`). "
      f"wrk: one thread, {meta['connections']} keep-alive connections. "
      "The server (moonport's master and worker; nginx's master and one worker) pinned to CPU 0; "
      "wrk and redis-server pinned to CPU 1. "
      f"{meta['rounds']} interleaved rounds of {meta['duration']} s per scenario after a "
      f"{meta['warmup']} s warm-up each; medians. CPU per request: the user + system time of the "
      "server's processes (/proc/PID/stat before and after each run) over the requests it served.")
    w("")
    w("![requests per second and CPU per request](redis/redis.png)")
    w("")

    # Targets.
    if "get" in scenarios:
        rps = med("get", "moonport", "rps") / med("get", "openresty", "rps")
        cpu = (med("get", "moonport", "server_cpu_us_per_request")
               / med("get", "openresty", "server_cpu_us_per_request"))
        w("| target (one GET per request) | this run | verdict |")
        w("| --- | --- | --- |")
        w(f"| requests per second ≥ {TARGET_RPS}× OpenResty's | {rps:.2f}× | "
          f"{'met' if rps >= TARGET_RPS else 'not met'} |")
        w(f"| server CPU per request ≤ {TARGET_CPU}× OpenResty's | {cpu:.2f}× | "
          f"{'met' if cpu <= TARGET_CPU else 'not met'} |")
        w("")
        if rps < TARGET_RPS or cpu > TARGET_CPU:
            busy = med("get", "moonport", "wrk_core_busy_pct")
            w("What stands in the way. On two cores, wrk and Redis share CPU 1, which was "
              f"{busy:.0f}% busy during moonport's get runs: the requests-per-second ratio "
              "cannot go far past the point where that core saturates, so the CPU per request "
              "is the firmer comparison. In moonport's own path, a profile of the get handler "
              "(perf and strace -c on the worker, 2026-12-01) found three costs OpenResty does "
              "not have. (1) An outbound socket stops reading when a receive is satisfied and "
              "starts again for the next receive and for the idle watch at `set_keepalive`, so "
              "libuv makes 3.4 to 4 `epoll_ctl` calls per request (half of them failing with "
              "EEXIST), where nginx makes none; the same build with reading left on while a "
              "connection is in use or pooled (a change to server/upstream/socket.c not in this "
              "build) served 8.8% more requests per second with 9.6% less CPU per request in an "
              "interleaved A/B (9 rounds of 3 s: 74,378 against 68,333 req/s, 13.10 against "
              "14.49 µs). (2) The Lua code runs mostly in LuaJIT's interpreter (17% of the "
              "worker's samples in libluajit, 2% in compiled traces): each cosocket wait ends "
              "a trace, and traces through `receive`'s wait loop abort, which blacklists "
              "lua-resty-redis's `_read_reply`. (3) `send` copies its table argument into a new "
              "table on every call, flat or not: 200 of the 768 Lua bytes per request.")
            w("")

    w("| scenario | moonport req/s | OpenResty req/s | moonport / OpenResty | "
      "moonport CPU µs/req | OpenResty CPU µs/req | moonport / OpenResty |")
    w("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    chart = ["scenario moonport OpenResty moonport_cpu OpenResty_cpu"]
    for s in scenarios:
        m, o = med(s, "moonport", "rps"), med(s, "openresty", "rps")
        mc = med(s, "moonport", "server_cpu_us_per_request")
        oc = med(s, "openresty", "server_cpu_us_per_request")
        w(f"| {s} | {fmt_int(m)}{star(s, 'moonport')} | {fmt_int(o)}{star(s, 'openresty')} | "
          f"{m / o:.2f} | {mc:.2f} | {oc:.2f} | {mc / oc:.2f} |")
        chart.append(f"{s} {m:.0f} {o:.0f} {mc:.3f} {oc:.3f}")
    with open(os.path.join(work, "chart.dat"), "w") as f:
        f.write("\n".join(chart) + "\n")
    if any(star(sc, sv) for sc in scenarios for sv in SERVERS):
        w("")
        w("\\* a run that makes this median had CPU 1 (wrk and Redis) at least 95% busy: the "
          "load generator may have set the pace, so the figure is a lower bound for the server.")
    w("")
    w("Per server, medians over the rounds: p50 and p99 are wrk's per-request latency; Redis µs/req "
      "is redis-server's CPU time per request (the same work for both servers); CPU 0 and CPU 1 "
      "busy are the two cores' use (CPU 1: wrk and Redis; near 100 there and not on CPU 0 would "
      "mean the load generator set the pace); other load is the CPU time of every other process "
      "on the machine plus time taken by the hypervisor (steal), in % of one CPU: the noise; "
      "errors are wrk's socket errors and non-2xx answers, summed over the rounds.")
    for s in scenarios:
        lines += detail_table(by, s, f"{s}: {SCENARIOS[s]}", SERVERS, LABEL,
                              lambda v: star(s, v), DETAIL)
    if upstream:
        w("")
        w("Connections to Redis each server held in the middle of its last run (`ss`), that is its "
          "pool under load: " + pools(upstream, scenarios, SERVERS, LABEL) + ". When a run "
          "ends, wrk closes its connections with requests in flight: moonport ends those "
          "requests' waits at once and closes their Redis connections, whose replies are still "
          "coming (see the README's \"When the client leaves\"); nginx runs those handlers to "
          "the end and pools the connections. The next run opens them again.")

    lines += alloc_section(
        work, meta, "the handler and lua-resty-redis: the client object, the command's pieces, "
        "the reply strings", budget="The budget is what spec/integration/alloc_spec.lua holds "
        "GET /get to, over 10,000 requests on one connection.",
        budgets={"GET /get": f"{LUA_BUDGET:,}, 0"})
    return finish(lines, out_path, by, scenarios, SERVERS, LABEL, 2, "[redis.csv](redis/redis.csv)")


if __name__ == "__main__":
    sys.exit(main(__doc__, report, check))
