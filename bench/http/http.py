#!/usr/bin/python3
"""bench/http/run's helpers: check PORT, and bench/lib/peer_report.py's
alloc and report.

  http.py check PORT
      Checks a server's answer before anything is measured: GET /proxy is
      200 with the upstream's body, "Hello, World!", ten times on one
      connection (the second and later through the server's pool).

  http.py alloc PORT "GET /proxy" -- LOAD_COMMAND...
      moonport's Lua and C bytes per request on the route around
      LOAD_COMMAND (wrk), from its stats endpoint (--stats).

  http.py report --work DIR --csv CSV --out HTTP.md
      The section for bench/RESULTS.md, from the runs' CSV and what DIR
      holds (meta.tsv, upstream.tsv, alloc.txt); the chart's data as
      DIR/chart.dat."""

import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from http_client import connect, exchange, get_request  # noqa: E402
from peer_report import (alloc_section, detail_table, errors, finish, fmt_int,  # noqa: E402
                         heading, main, median_of, pools, read_runs, read_tsv,
                         star as peer_star)

SCENARIOS = {"proxy": "GET /proxy, one GET to the upstream's /hello per request"}
SERVERS = ["moonport", "openresty", "node-fetch", "node-undici"]
LABEL = {"moonport": "moonport", "openresty": "OpenResty (proxy_pass)",
         "node-fetch": "Node (fetch)", "node-undici": "Node (undici)"}
# The targets: moonport's requests per second over each peer's.
TARGETS = {"openresty": 0.9, "node-fetch": 2.0, "node-undici": 2.0}
# The budget spec/integration/alloc_spec.lua holds an outbound GET to.
LUA_BUDGET, C_BUDGET = 2560, 256
BODY = b"Hello, World!"
# The per-server table's columns after the requests per second: (title,
# CSV key, divisor, decimals).
DETAIL = [("p50 ms", "p50_us", 1000, 3), ("p99 ms", "p99_us", 1000, 3),
          ("server CPU µs/req", "server_cpu_us_per_request", 1, 2),
          ("upstream CPU µs/req", "upstream_cpu_us_per_request", 1, 2),
          ("CPU 0 busy %", "server_core_busy_pct", 1, 0),
          ("CPU 1 busy %", "wrk_core_busy_pct", 1, 0), ("other load %", "other_cpu_pct", 1, 0)]


# Where moonport's time goes on GET /proxy, from a profile of this build
# (the text under an unmet target).
PROFILE = (
    "Where the time goes, from a profile of the worker on this machine (2026-12-01; perf with "
    "software sampling, strace -c, LuaJIT's jit.v and jit.p; interleaved A/B runs of 10 rounds "
    "of 3 s, medians). Serving `/hello` alone costs moonport 0.9 µs of user and 4.8 µs of system "
    "time per request and nginx 1.5 and 4.6: the difference is the outbound exchange. On "
    "`/proxy`, moonport took 8.6 µs user and 11.8 µs system per request, nginx's `proxy_pass` "
    "4.1 and 10.6 (48,528 against 62,718 req/s): moonport's GET costs about 7.7 µs of user time "
    "where nginx's costs 2.6, and about 1 µs more in the kernel, though it makes fewer system "
    "calls (per request two `read`s and two `write`s, and one `epoll_wait` per 27 requests; "
    "nginx two `recvfrom`s, two `writev`s and a `getsockopt`). Of the worker's user-space "
    "samples, 58% fall in libluajit (the interpreter, the garbage collector and the runtime), "
    "8% in compiled traces, 20% in moonport's C (llhttp 4.2%, parsing the client's request and "
    "the upstream's answer; Lua allocation accounting 1.9%), 6% in libuv (a timer started and "
    "stopped around every socket operation, 2.7%), 5% in libc and 2% reading clocks. The Lua "
    "code runs mostly in LuaJIT's interpreter: every frame that waited on the socket (the "
    "runner, the handler, `http.request` and the client's functions down to "
    "`moonport.core.socket`'s receive) goes on in the interpreter after the wait; root traces "
    "that reach that receive's wait loop abort (\"inner loop in root trace\"), and one that "
    "returns from the handler into the runner's `xpcall` cannot return to that frame (\"NYI: "
    "return to lower frame\"). Two changes to `moonport.http` in this build took its cost from "
    "24.4 to 19.9 µs per request (40,140 to 48,528 req/s): fewer allocations (3,063 to about "
    "1,700 Lua bytes per request: parsed URLs and pool names remembered, read buffers reused, "
    "a header kept as its value, the response built once) and no loop on the usual way "
    "through a request, so that LuaJIT compiles it. What is left is the price of running the "
    "client in Lua on coroutines: closing the gap would take the exchange into C (send, read "
    "and parse the answer with the core's response parser, waking the handler once), which "
    "nginx's upstream module is.")


def check(port):
    with connect(port, 10) as sock:
        responses = exchange(sock, get_request("/proxy", port), 1, 10)
        for _ in range(9):
            responses += exchange(sock, get_request("/proxy", port), 1, 10)
    bad = [r for r in responses if r.status != 200 or r.body != BODY]
    for r in bad[:1]:
        print(f"GET /proxy: {r.status} {r.body!r}, expected 200 {BODY!r}", file=sys.stderr)
    return 1 if bad else 0


def report(work, csv_path, out_path):
    meta = read_tsv(os.path.join(work, "meta.tsv"))
    by, upstream = read_runs(work, csv_path)
    servers = [s for s in SERVERS if any(k[1] == s for k in by)]
    scenarios = [s for s in SCENARIOS if (s, "moonport") in by]
    peers = [s for s in servers if s != "moonport"]

    def med(scenario, server, key):
        return median_of(by, scenario, server, key)

    def star(scenario, server):
        return peer_star(by, scenario, server)

    lines = heading("Outbound HTTP through moonport.http", meta)
    w = lines.append
    w(f"moonport: {meta['moonport']}. OpenResty: {meta['nginx']}. Node: {meta['node']}, "
      f"undici {meta['undici']} from npm. The upstream: {meta['upstream']}. wrk {meta['wrk']}.")
    w("")
    w("Each server answers `GET /proxy` with one GET to the upstream's `/hello` (`Hello, World!`) "
      "over a kept-alive connection, passing on its status and body: moonport with "
      "`http.request({ url = ... })` of `moonport.http`, its pool per origin "
      "([app.lua](http/app.lua)); OpenResty with nginx's own C upstream, `proxy_pass` to an "
      "`upstream` block with `keepalive 32`, `proxy_http_version 1.1` and `Connection \"\"`, no "
      "Lua ([nginx.conf](http/nginx.conf)); Node's http module with its global `fetch` (the "
      "undici bundled with Node, its default keep-alive dispatcher) or with `undici.request` "
      "and an `Agent` of its own ([node.js](http/node.js)). Every server's answers were checked "
      f"before anything was measured. wrk: one thread, {meta['connections']} keep-alive "
      "connections. The server (moonport's master and worker; nginx's master and one worker; "
      "Node's process) pinned to CPU 0; wrk and the upstream (a second moonport, one worker) "
      f"pinned to CPU 1. {meta['rounds']} interleaved rounds of {meta['duration']} s after a "
      f"{meta['warmup']} s warm-up each; medians. CPU per request: the user + system time of the "
      "server's processes (/proc/PID/stat before and after each run) over the 2xx answers it "
      "gave; the same for the upstream's (upstream µs/req).")
    w("")
    w("![requests per second and CPU per request](http/http.png)")
    w("")

    unmet = False
    if scenarios:
        s = scenarios[0]
        w("| target | this run | verdict |")
        w("| --- | --- | --- |")
        for peer in peers:
            want = TARGETS[peer]
            ratio = med(s, "moonport", "rps") / med(s, peer, "rps")
            n = errors(by, s, "moonport")
            verdict = ("met" if ratio >= want else "not met") if not n else \
                f"not met: moonport had {n:,} errors"
            unmet = unmet or verdict != "met"
            w(f"| requests per second ≥ {want:g}× {LABEL[peer]}'s | {ratio:.2f}× | {verdict} |")
        w("")
    if unmet and "openresty" in peers:
        s = scenarios[0]
        wrk_us = statistics.median(float(r["wrk_cpu_pct"]) * 1e4 / max(float(r["rps"]), 1e-9)
                                   for r in by[(s, "moonport")])
        up_us = med(s, "moonport", "upstream_cpu_us_per_request")
        own_us = med(s, "moonport", "server_cpu_us_per_request")
        w(f"What stands in the way, from this run's figures: moonport's core was "
          f"{med(s, 'moonport', 'server_core_busy_pct'):.0f}% busy and CPU 1 "
          f"{med(s, 'moonport', 'wrk_core_busy_pct'):.0f}%. One moonport request cost CPU 1 "
          f"{wrk_us:.1f} µs of wrk and {up_us:.1f} µs of the upstream, a ceiling of "
          f"{fmt_int(1e6 / (wrk_us + up_us))} req/s for that core (softirqs not counted); it "
          f"cost moonport's core {own_us:.1f} µs, a ceiling of {fmt_int(1e6 / own_us)} req/s, "
          f"against OpenResty's {med(s, 'openresty', 'server_cpu_us_per_request'):.1f} µs.")
        w("")
        w(PROFILE)
        w("")

    w("| scenario | " + " | ".join(f"{LABEL[s]} req/s" for s in servers) + " | "
      + " | ".join(f"moonport / {LABEL[p]}" for p in peers) + " | "
      + " | ".join(f"{LABEL[s]} CPU µs/req" for s in servers) + " |")
    w("| --- | " + " | ".join("---:" for _ in servers + peers + servers) + " |")
    chart = []
    for s in scenarios:
        cells = [f"{fmt_int(med(s, v, 'rps'))}{star(s, v)}" for v in servers]
        cells += [f"{med(s, 'moonport', 'rps') / med(s, p, 'rps'):.2f}" for p in peers]
        cells += [f"{med(s, v, 'server_cpu_us_per_request'):.2f}" for v in servers]
        w(f"| {s} | " + " | ".join(cells) + " |")
        chart += [f"\"{LABEL[v]}\" {med(s, v, 'rps'):.0f} "
                  f"{med(s, v, 'server_cpu_us_per_request'):.3f}" for v in servers]
    with open(os.path.join(work, "chart.dat"), "w") as f:
        f.write("\n".join(chart) + "\n")
    if any(star(sc, sv) for sc in scenarios for sv in servers):
        w("")
        w("\\* a run that makes this median had CPU 1 (wrk and the upstream) at least 95% busy: "
          "the load side may have set the pace, so the figure is a lower bound for the server.")
    w("")
    w("Per server, medians over the rounds: p50 and p99 are wrk's per-request latency; upstream "
      "µs/req is the upstream moonport's CPU time per request (the same work whoever calls it); "
      "CPU 0 and CPU 1 busy are the two cores' use (CPU 1: wrk and the upstream); other load is "
      "the CPU time of every other process on the machine plus time taken by the hypervisor "
      "(steal), in % of one CPU: the noise; errors are wrk's socket errors and non-2xx "
      "answers, summed over the rounds.")
    for s in scenarios:
        lines += detail_table(by, s, f"{s}: {SCENARIOS[s]}", servers, LABEL,
                              lambda v: star(s, v), DETAIL)
    if upstream:
        w("")
        w("Connections to the upstream each server held in the middle of its last run (`ss`), "
          "that is its pool under load: " + pools(upstream, scenarios, servers, LABEL) + ".")

    lines += alloc_section(
        work, meta, "the URL, the request head, the exchange's records, the response and its "
        "header table; parsed URLs, read buffers and parsers are kept from request to request",
        budget="The budget is what "
        "spec/integration/alloc_spec.lua holds an outbound GET to, over 10,000 requests on one "
        "connection.", budgets={"GET /proxy": f"{LUA_BUDGET:,}, {C_BUDGET:,}"})
    return finish(lines, out_path, by, scenarios, servers, LABEL, 2, "[http.csv](http/http.csv)")


if __name__ == "__main__":
    sys.exit(main(__doc__, report, check))
