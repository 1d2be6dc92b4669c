#!/usr/bin/python3
"""bench/tfb/run's helpers.

  tfb.py alloc PORT ROUTE -- LOAD_COMMAND...
      Reads moonport's stats endpoint (--stats), runs LOAD_COMMAND (wrk),
      reads it again and prints, for ROUTE ("GET /db"):
      "ROUTE lua=<mean Lua bytes> c=<mean C bytes> requests=N mallocs=M"
      (M: the worker's malloc calls meanwhile, the stats requests' own
      included).

  tfb.py report --work DIR --csv CSV --out TFB.md
      The section for bench/RESULTS.md from the per-run CSV, DIR/meta.tsv,
      DIR/upstream.tsv and DIR/alloc.txt; each test type's chart data as
      DIR/chart-TEST.dat."""

import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from peer_report import (alloc_section, detail_table, errors as peer_errors,  # noqa: E402
                         finish, fmt_int, heading, main, median_of, pools, read_runs,
                         read_tsv, star as peer_star)

TESTS = ["json", "db", "queries", "fortunes", "updates", "plaintext"]
PATHS = {"json": "/json", "db": "/db", "queries": "/queries?queries=20",
         "fortunes": "/fortunes", "updates": "/updates?queries=20", "plaintext": "/plaintext"}
SCENARIOS = {}
for _t in TESTS:
    SCENARIOS[f"{_t}-32"] = (f"GET {PATHS[_t]}", 32, 1)
    SCENARIOS[f"{_t}-256"] = (f"GET {PATHS[_t]}", 256, 1)
SCENARIOS["plaintext-pipeline"] = ("GET /plaintext", 256, 16)
SERVERS = ["moonport", "node", "node-pg", "fastapi", "openresty"]
LABEL = {"moonport": "moonport", "node": "Node (postgres.js)", "node-pg": "Node (pg)",
         "fastapi": "FastAPI", "openresty": "OpenResty"}
# The targets: moonport's requests per second over each peer's.
# "Node" is both Node peers: the target holds against each.
TARGETS = {
    "json": {"node": 2.0, "node-pg": 2.0, "fastapi": 10.0},
    "db": {"node": 2.0, "node-pg": 2.0, "fastapi": 10.0},
    "queries": {"node": 3.0, "node-pg": 3.0, "fastapi": 10.0},
    "fortunes": {"node": 2.0, "node-pg": 2.0, "fastapi": 10.0},
    "updates": {"node": 2.0, "node-pg": 2.0, "fastapi": 10.0},
    "plaintext": {"fastapi": 10.0},
    "plaintext-pipeline": {"openresty": 5.0, "fastapi": 10.0},
}


# The per-server table's columns after the requests per second: (title,
# CSV key, divisor, decimals).
DETAIL = [("p50 ms", "p50_us", 1000, 2), ("p99 ms", "p99_us", 1000, 2),
          ("server CPU µs/req", "server_cpu_us_per_request", 1, 1),
          ("DB CPU µs/req", "db_cpu_us_per_request", 1, 1),
          ("statements", "db_statements_per_request", 1, 2),
          ("CPU 0 busy %", "server_core_busy_pct", 1, 0),
          ("CPU 1 busy %", "wrk_core_busy_pct", 1, 0), ("other load %", "other_cpu_pct", 1, 0)]


def targets_of(scenario):
    if scenario in TARGETS:
        return TARGETS[scenario]
    return TARGETS[scenario.split("-")[0]]


# ---------------------------------------------------------------- report




def report(work, csv_path, out_path):
    meta = read_tsv(os.path.join(work, "meta.tsv"))
    by, upstream = read_runs(work, csv_path)
    logged = {}
    logged_path = os.path.join(work, "log_errors.tsv")
    if os.path.exists(logged_path):
        for line in open(logged_path):
            server, text = line.rstrip("\n").split("\t", 1)
            logged.setdefault(server, []).append(text)
    servers = [s for s in SERVERS if any(k[1] == s for k in by)]
    scenarios = [s for s in SCENARIOS if any(k[0] == s for k in by)]

    def has(scenario, server):
        return (scenario, server) in by

    def med(scenario, server, key):
        return median_of(by, scenario, server, key)

    def wrk_us_per_request(scenario, server):
        """wrk's CPU per 2xx answer, median over the rounds."""
        return statistics.median(float(r["wrk_cpu_pct"]) * 1e4 / max(float(r["rps"]), 1e-9)
                                 for r in by[(scenario, server)])

    def errors(scenario, server):
        return peer_errors(by, scenario, server)

    def dagger(scenario, server):
        return "†" if errors(scenario, server) else ""

    def star(scenario, server):
        return peer_star(by, scenario, server)

    def describe(scenario):
        route, conns, depth = SCENARIOS[scenario]
        return f"`{route}`, {conns} connections" + (f", {depth} pipelined" if depth > 1 else "")

    lines = heading("TechEmpower's six test types", meta)
    w = lines.append
    w(f"moonport: {meta['moonport']}, [scripts/tfb.lua](../scripts/tfb.lua) on `moonport.pg` "
      f"(libpq {meta['libpq']}) and `moonport.template`, one worker. "
      f"Node: {meta['node']} with postgres.js {meta['postgres_js']} (`max: 1`) and with "
      f"node-postgres (`pg`) {meta['node_pg']}, both from npm ([node.js](tfb/node.js)). "
      f"FastAPI: {meta['fastapi']}, asyncpg {meta['asyncpg']}, Jinja2 {meta['jinja2']} "
      f"([fastapi_app.py](tfb/fastapi_app.py)). OpenResty: Debian's nginx {meta['nginx']} "
      "([nginx.conf](tfb/nginx.conf)), for json and plaintext only: Debian packages no "
      "non-blocking PostgreSQL client for lua-nginx-module (pgmoon is not packaged, and "
      f"lua-dbi-postgresql blocks the worker). PostgreSQL {meta['postgres']}; wrk {meta['wrk']}.")
    if meta.get("node_debian"):
        w(f"Debian 12's own Node.js is {meta['node_debian']} (package nodejs); the issue's peer "
          "is Node 20, which comes from NodeSource's nodejs package.")
    w("")
    w("Every server answers TechEmpower's six tests on TechEmpower's `world` and `fortune` "
      "tables ([tfb.sql](tfb/tfb.sql)) and passed [verify](tfb/verify), TechEmpower's "
      "verification rules with the query counts, before anything was measured. queries and "
      "updates ask for 20 rows: one statement per row, each ended by its own Sync, then, for "
      "updates, one bulk UPDATE of the 20 rows (FastAPI: asyncpg's executemany).")
    w("")
    w(f"Layout: the server, one process (moonport: a master and one worker; the peers: one "
      f"process each) pinned to CPU 0; wrk (one thread) and PostgreSQL (every backend) pinned "
      f"to CPU 1. PostgreSQL: a throw-away cluster made by the bench with initdb, "
      f"{meta['pg_settings']}. {meta['rounds']} interleaved rounds of {meta['duration']} s per "
      f"scenario after a {meta['warmup']} s warm-up per server; medians. CPU per request: the "
      "user + system time of the server's processes (/proc/PID/stat before and after each "
      "run) over the requests it served; the same for PostgreSQL's processes (DB µs/req). "
      "Statements per request: the calls `pg_stat_statements` counted on world and fortune "
      "over the requests served.")
    w("")
    w(" ".join(f"![{t}](tfb/tfb-{t}.png)" for t in TESTS
               if any(sc.split("-")[0] == t for sc in scenarios)))
    w("")

    w("| target | scenario | this run | verdict |")
    w("| --- | --- | --- | --- |")
    unmet = []
    for s in scenarios:
        if not has(s, "moonport"):
            continue
        for peer, want in targets_of(s).items():
            if not has(s, peer):
                continue
            ratio = med(s, "moonport", "rps") / med(s, peer, "rps")
            n = errors(s, "moonport")
            verdict = ("met" if ratio >= want else "not met") if not n else \
                f"not met: moonport had {n:,} errors"
            if verdict != "met":
                unmet.append((s, peer, want))
            w(f"| requests per second ≥ {want:g}× {LABEL[peer]}'s | {s} | {ratio:.2f}× | "
              f"{verdict} |")
    w("")
    if unmet:
        w("What stands in the way, from this run's figures. CPU 1 carries wrk and PostgreSQL; "
          "the most requests per second it could carry for moonport, with nothing else on it, "
          "is one second over the CPU 1 time one moonport request cost there (wrk's CPU and "
          "PostgreSQL's per request, softirqs not counted). The last column is the same bound "
          "for moonport's own core, from its CPU per request.")
        w("")
        w("| scenario | target req/s | CPU 1 ceiling req/s (wrk + PostgreSQL µs/req) | "
          "PostgreSQL µs per statement | CPU 0 ceiling req/s (moonport µs/req) | "
          "what sets the pace |")
        w("| --- | ---: | ---: | ---: | ---: | --- |")
        for s in dict.fromkeys(u[0] for u in unmet):
            need = max(want * med(s, peer, "rps") for (sc, peer, want) in unmet if sc == s)
            wrk_us = wrk_us_per_request(s, "moonport")
            db_us = med(s, "moonport", "db_cpu_us_per_request")
            own_us = med(s, "moonport", "server_cpu_us_per_request")
            cpu1, cpu0 = 1e6 / (wrk_us + db_us), 1e6 / own_us
            if cpu1 < need and cpu0 < need:
                note = "both cores"
            elif cpu1 < need:
                note = "CPU 1 (wrk and the database)"
            elif cpu0 < need:
                note = "moonport's own core"
            else:
                note = "neither ceiling"
            if errors(s, "moonport"):
                note += f"; {errors(s, 'moonport'):,} errors"
            statements = med(s, "moonport", "db_statements_per_request")
            per_statement = f"{db_us / statements:.1f}" if statements > 0 else "—"
            w(f"| {s} | {fmt_int(need)} | {fmt_int(cpu1)} ({wrk_us:.1f} + {db_us:.1f}) | "
              f"{per_statement} | {fmt_int(cpu0)} ({own_us:.1f}) | {note} |")
        w("")
        w("moonport.pg sends a worker's statements over one connection (its default "
          "`pool_size`), so one PostgreSQL backend runs them all, on the core it shares with "
          "wrk here; each statement is its own transaction ended by a Sync, as TechEmpower's "
          "rules require, and costs PostgreSQL the CPU time above whoever sends it. Where CPU "
          "1's ceiling is below the target, no server could reach the target on this layout "
          "at that cost per statement.")
        w("")

    peers = [s for s in servers if s != "moonport"]
    w("| scenario | " + " | ".join(f"{LABEL[s]} req/s" for s in servers) + " | "
      + " | ".join(f"moonport / {LABEL[p]}" for p in peers) + " | "
      + " | ".join(f"{LABEL[s]} CPU µs/req" for s in servers) + " |")
    w("| --- | " + " | ".join("---:" for _ in servers + peers + servers) + " |")
    for s in scenarios:
        cells = [f"{fmt_int(med(s, v, 'rps'))}{star(s, v)}{dagger(s, v)}" if has(s, v) else "—"
                 for v in servers]
        cells += [f"{med(s, 'moonport', 'rps') / med(s, p, 'rps'):.2f}"
                  if has(s, p) and has(s, "moonport") else "—" for p in peers]
        cells += [f"{med(s, v, 'server_cpu_us_per_request'):.1f}" if has(s, v) else "—"
                  for v in servers]
        w(f"| {s} | " + " | ".join(cells) + " |")
    for t in TESTS:
        mine = [s for s in scenarios if s.split("-")[0] == t]
        if not mine:
            continue
        them = [v for v in servers if all(has(s, v) for s in mine)]
        chart = ["scenario " + " ".join(LABEL[v].replace(" ", "_") for v in them)
                 + " " + " ".join(LABEL[v].replace(" ", "_") for v in them)]
        for s in mine:
            chart.append(s + " " + " ".join(f"{med(s, v, 'rps'):.0f}" for v in them) + " "
                         + " ".join(f"{med(s, v, 'server_cpu_us_per_request'):.3f}"
                                    for v in them))
        with open(os.path.join(work, f"chart-{t}.dat"), "w") as f:
            f.write("\n".join(chart) + "\n")
    if any(has(sc, sv) and star(sc, sv) for sc in scenarios for sv in servers):
        w("")
        w("\\* a run that makes this median had CPU 1 (wrk and PostgreSQL) at least 95% busy: "
          "the load side may have set the pace, so the figure is a lower bound for the server.")
    if any(dagger(sc, sv) for sc in scenarios for sv in servers):
        w("")
        w("† the server answered some requests with errors in this scenario (the errors column "
          "below): requests per second and CPU per request count its 2xx answers only.")
    w("")
    w("Per server, medians over the rounds: p50 and p99 are wrk's per-request latency; DB "
      "µs/req is PostgreSQL's CPU time per request (its backends, all on CPU 1); statements "
      "is what pg_stat_statements counted per request served (a little above the test's "
      "count: wrk closes its connections with requests in flight, whose queries still ran); "
      "CPU 0 and CPU 1 busy are the two cores' use; other load is the CPU time of every other "
      "process on the machine plus time taken by the hypervisor (steal), in % of one CPU: the "
      "noise; errors are wrk's socket errors and non-2xx answers, summed over the rounds; "
      "req/s and the figures per request count 2xx answers only.")
    for s in scenarios:
        lines += detail_table(by, s, f"{s}: {describe(s)}", servers, LABEL,
                              lambda v: star(s, v) + dagger(s, v), DETAIL)
    failing = [sv for sv in servers if any(errors(sc, sv) for sc in scenarios)]
    if failing:
        w("")
        w("What the errors said, from the error lines of each failing server's log: " + "; ".join(
            f"{LABEL[sv]}: " + (", ".join(f"`{t}`" for t in logged[sv]) if sv in logged
                                else "nothing logged")
            for sv in failing) + ".")
    if upstream:
        w("")
        w("Connections to PostgreSQL each server held in the middle of its last run (`ss`): " +
          pools(upstream, scenarios, servers, LABEL) + ".")

    lines += alloc_section(work, meta, "the handler, moonport.pg's rows, the template and the JSON",
                           c=", libpq's results included")
    return finish(lines, out_path, by, scenarios, servers, LABEL, 1, "[tfb.csv](tfb/tfb.csv)")


if __name__ == "__main__":
    sys.exit(main(__doc__, report))
