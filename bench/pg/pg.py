#!/usr/bin/python3
"""bench/pg/run's helpers.

  pg.py check PORT WORLD
      Checks a server's answers before anything is measured, against the
      table as the database holds it (WORLD: "id|randomnumber" lines, psql's
      unaligned output). GET /db: 200, application/json, exactly
      {"id":N,"randomNumber":M} with N in 1..10000 and M the table's value
      for N; 20 requests give at least 15 different ids. GET
      /queries?queries=20: an array of 20 such objects with at least 18
      different ids, and two answers differ. TechEmpower's bounds:
      queries=0 and queries=foo give 1 row, queries=501 gives 500. Then 10
      pipelined /queries?queries=20 in one write, and 64 connections each
      asking /db at once: every answer right. Prints one line per check;
      exits 1 naming what was wrong.

  pg.py alloc PORT ROUTE -- LOAD_COMMAND...
      Reads moonport's stats endpoint (--stats), runs LOAD_COMMAND (wrk),
      reads it again and prints, for ROUTE ("GET /db"):
      "ROUTE lua=<mean Lua bytes> c=<mean C bytes> requests=N mallocs=M"
      (M: the worker's malloc calls meanwhile, the stats requests' own
      included).

  pg.py report --work DIR --csv CSV --out PG.md
      The section for bench/RESULTS.md from the per-run CSV, DIR/meta.tsv,
      DIR/upstream.tsv and DIR/alloc.txt; the chart's data as
      DIR/chart.dat."""

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from http_client import connect, exchange, get_request  # noqa: E402
from peer_report import alloc, fmt_int, get, read_tsv  # noqa: E402

SCENARIOS = {
    "db-32": ("GET /db", 32),
    "db-256": ("GET /db", 256),
    "queries-32": ("GET /queries?queries=20", 32),
    "queries-256": ("GET /queries?queries=20", 256),
}
SERVERS = ["moonport", "node", "fastapi"]
LABEL = {"moonport": "moonport", "node": "Node", "fastapi": "FastAPI"}
# The targets: moonport's requests per second over each peer's.
TARGETS = {
    "db": {"node": 2.0, "fastapi": 10.0},
    "queries": {"node": 3.0, "fastapi": 10.0},
}


# ---------------------------------------------------------------- check



def world_error(obj, world):
    """What is wrong with one {"id","randomNumber"} object, or None."""
    if not isinstance(obj, dict) or sorted(obj) != ["id", "randomNumber"]:
        return f"{obj!r} is not an object with exactly id and randomNumber"
    i, n = obj["id"], obj["randomNumber"]
    if type(i) is not int or type(n) is not int:
        return f"{obj!r}: id and randomNumber must be integers"
    if not 1 <= i <= 10000:
        return f"{obj!r}: id outside 1..10000"
    if world[i] != n:
        return f"{obj!r}: the table holds randomNumber {world[i]} for id {i}"
    return None


def decode(response, path):
    if response.status != 200:
        raise ValueError(f"GET {path}: status {response.status} ({response.body[:200]!r})")
    ctype = response.headers.get("content-type", "")
    if not ctype.startswith("application/json"):
        raise ValueError(f"GET {path}: Content-Type {ctype!r}, want application/json")
    try:
        return json.loads(response.body)
    except ValueError:
        raise ValueError(f"GET {path}: not JSON: {response.body[:200]!r}")


def check_db(response, world):
    doc = decode(response, "/db")
    error = world_error(doc, world)
    if error:
        raise ValueError(f"GET /db: {error}")
    return doc["id"]


def check_queries(response, path, world, n):
    doc = decode(response, path)
    if not isinstance(doc, list) or len(doc) != n:
        got = len(doc) if isinstance(doc, list) else type(doc).__name__
        raise ValueError(f"GET {path}: {got} rows, want an array of {n}")
    for obj in doc:
        error = world_error(obj, world)
        if error:
            raise ValueError(f"GET {path}: {error}")
    return [obj["id"] for obj in doc]


def check(port, world_path):
    world = {}
    with open(world_path) as f:
        for line in f:
            i, n = line.strip().split("|")
            world[int(i)] = int(n)
    if sorted(world) != list(range(1, 10001)):
        raise SystemExit(f"{world_path}: the table does not hold ids 1..10000")

    ids = [check_db(get(port, "/db"), world) for _ in range(20)]
    if len(set(ids)) < 15:
        raise ValueError(f"GET /db: 20 requests gave only {len(set(ids))} different ids: {ids}")
    print(f"  /db: ok (20 answers, {len(set(ids))} different ids, values as in the table)")

    path = "/queries?queries=20"
    answers = [check_queries(get(port, path), path, world, 20) for _ in range(3)]
    for a in answers:
        if len(set(a)) < 18:
            raise ValueError(f"GET {path}: only {len(set(a))} different ids of 20: {a}")
    if answers[0] == answers[1] == answers[2]:
        raise ValueError(f"GET {path}: three answers alike: {answers[0]}")
    print(f"  {path}: ok (20 rows, {min(len(set(a)) for a in answers)}+ different ids per answer)")

    for raw, n in (("0", 1), ("foo", 1), ("501", 500)):
        p = f"/queries?queries={raw}"
        check_queries(get(port, p), p, world, n)
    print("  /queries bounds: ok (queries=0 and foo give 1 row, 501 gives 500)")

    with connect(port, 10) as sock:
        batch = exchange(sock, get_request(path, port) * 10, 10, 10)
    for r in batch:
        check_queries(r, path, world, 20)
    print(f"  {path} x 10 pipelined in one write: ok")

    errors, seen = [], []

    def one():
        try:
            seen.append(check_db(get(port, "/db"), world))
        except (OSError, ValueError) as e:
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=one) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise ValueError(f"64 concurrent GET /db: {len(errors)} wrong, first: {errors[0]}")
    print(f"  64 concurrent /db: ok ({len(set(seen))} different ids)")
    return 0


# ---------------------------------------------------------------- report




def report(work, csv_path, out_path):
    meta = read_tsv(os.path.join(work, "meta.tsv"))
    upstream = {}
    up_path = os.path.join(work, "upstream.tsv")
    if os.path.exists(up_path):
        for line in open(up_path):
            scenario, server, n = line.split()
            upstream[(scenario, server)] = n
    logged = {}
    logged_path = os.path.join(work, "log_errors.tsv")
    if os.path.exists(logged_path):
        for line in open(logged_path):
            server, text = line.rstrip("\n").split("\t", 1)
            logged.setdefault(server, []).append(text)
    rows = list(csv.DictReader(open(csv_path)))
    by = {}
    for row in rows:
        by.setdefault((row["scenario"], row["server"]), []).append(row)
    servers = [s for s in SERVERS if any(k[1] == s for k in by)]
    scenarios = [s for s in SCENARIOS if any(k[0] == s for k in by)]
    has_moonport = "moonport" in servers

    def med(scenario, server, key):
        return statistics.median(float(r[key]) for r in by[(scenario, server)])

    def wrk_us_per_request(scenario, server):
        """wrk's CPU per 2xx answer, median over the rounds."""
        return statistics.median(float(r["wrk_cpu_pct"]) * 1e4 / max(float(r["rps"]), 1e-9)
                                 for r in by[(scenario, server)])

    def errors(scenario, server):
        return sum(int(r[k]) for r in by[(scenario, server)]
                   for k in ("errors_connect", "errors_read", "errors_write",
                             "errors_status", "errors_timeout"))

    def dagger(scenario, server):
        return "†" if errors(scenario, server) else ""

    def star(scenario, server):
        """A star when a run that makes the median had CPU 1 (wrk and
        PostgreSQL) at least 95% busy: the load side may have set the pace."""
        rs = sorted(by[(scenario, server)], key=lambda r: float(r["rps"]))
        mid = [rs[(len(rs) - 1) // 2], rs[len(rs) // 2]]
        return "\\*" if any(float(r["wrk_core_busy_pct"]) >= 95 for r in mid) else ""

    lines = []
    w = lines.append
    w("## PostgreSQL: TechEmpower's single and multiple queries")
    w("")
    w(f"Command: `{meta['command']}`, {meta['date']}, {meta['cpu']}, kernel {meta['kernel']}.")
    if has_moonport:
        w(f"moonport: {meta['moonport']}, `moonport.pg` (libpq {meta['libpq']}), one worker.")
    else:
        w(f"moonport: not measured: {meta['moonport_skipped']}")
    w(f"Node: {meta['node']}, postgres.js {meta['postgres_js']} (npm), `max: 1`. "
      f"FastAPI: {meta['fastapi']}, asyncpg {meta['asyncpg']}, a pool of "
      f"{meta['fastapi_pool']} connections. PostgreSQL {meta['postgres']}; wrk {meta['wrk']}.")
    if meta.get("node_debian"):
        w(f"Debian 12's own Node.js is {meta['node_debian']} (package nodejs); the issue's peer "
          "is Node 20, which comes from NodeSource's nodejs package.")
    w("")
    w("The apps ([app.lua](pg/app.lua), [node.js](pg/node.js), "
      "[fastapi_app.py](pg/fastapi_app.py)) answer TechEmpower's single query test, "
      "`GET /db`: one row of the 10,000-row `world` table ([world.sql](pg/world.sql)) by a "
      "random primary key, as `{\"id\":N,\"randomNumber\":M}`, and its multiple queries "
      "test, `GET /queries?queries=20`: 20 random rows, as a JSON array. The same SQL in all, "
      "`SELECT id, randomnumber FROM world WHERE id = $1`, prepared once per connection. "
      "moonport sends the 20 statements in one pipeline (`db:batch`, a Sync after each); "
      "Node issues them at once on its one connection and awaits them together "
      "(postgres.js pipelines them); FastAPI runs them one after another on one pooled "
      "connection, as TechEmpower's FastAPI entry does. Every server's answers are checked "
      "against the table before anything is measured (values, ids in range, distinct ids, "
      "pipelined and concurrent requests).")
    w("")
    w(f"Layout: the server, one process ({'moonport: a master and one worker; ' if has_moonport else ''}"
      f"Node and uvicorn: one process each) pinned to CPU 0; wrk (one thread) and PostgreSQL "
      f"(every backend) pinned to CPU 1. PostgreSQL: a throw-away cluster made by the bench "
      f"with initdb, {meta['pg_settings']}. {meta['rounds']} interleaved rounds of "
      f"{meta['duration']} s per scenario after a {meta['warmup']} s warm-up per server; "
      "medians. CPU per request: the user + system time of the server's processes "
      "(/proc/PID/stat before and after each run) over the requests it served; the same for "
      "PostgreSQL's processes (DB µs/req). Statements per request: the calls "
      "`pg_stat_statements` counted for the query over the requests served.")
    w("")
    w("![requests per second and CPU per request](pg/pg.png)")
    w("")

    if has_moonport:
        w("| target | scenario | this run | verdict |")
        w("| --- | --- | ---: | --- |")
        unmet = []
        for s in scenarios:
            kind = s.split("-")[0]
            for peer, want in TARGETS[kind].items():
                if (s, peer) not in by:
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
              "is one second over the CPU 1 time one moonport request cost there (wrk's CPU "
              "and PostgreSQL's per request, softirqs not counted). The last column is the same "
              "bound for moonport's own core, from its CPU per request.")
            w("")
            w("| scenario | target req/s | CPU 1 ceiling req/s (wrk + PostgreSQL µs/req) | "
              "CPU 0 ceiling req/s (moonport µs/req) |")
            w("| --- | ---: | ---: | ---: |")
            notes = []
            for s in dict.fromkeys(u[0] for u in unmet):
                need = max(want * med(s, peer, "rps") for (sc, peer, want) in unmet if sc == s)
                wrk_us = wrk_us_per_request(s, "moonport")
                db_us = med(s, "moonport", "db_cpu_us_per_request")
                own_us = med(s, "moonport", "server_cpu_us_per_request")
                cpu1, cpu0 = 1e6 / (wrk_us + db_us), 1e6 / own_us
                w(f"| {s} | {fmt_int(need)} | {fmt_int(cpu1)} "
                  f"({wrk_us:.1f} + {db_us:.1f}) | {fmt_int(cpu0)} ({own_us:.1f}) |")
                if cpu1 < need and cpu0 < need:
                    note = ("both ceilings are below the target: at this run's CPU per request "
                            "neither moonport's core nor the one the database shares with wrk "
                            "could carry it")
                elif cpu1 < need:
                    note = ("only CPU 1's ceiling is below the target: the database's core "
                            "sets the pace")
                elif cpu0 < need:
                    note = "only moonport's own core's ceiling is below the target"
                else:
                    note = "neither ceiling is below the target"
                if errors(s, "moonport"):
                    note += (f"; moonport also answered {errors(s, 'moonport'):,} requests "
                             "with errors (below)")
                notes.append(f"In {s}, {note}.")
            w("")
            w("moonport.pg sends a worker's queries over one connection (its default "
              "`pool_size`), so PostgreSQL runs them all in one backend process, which can use "
              "at most one core: here the core it shares with wrk. " + " ".join(notes))
            w("")

    head = "| scenario | " + " | ".join(f"{LABEL[s]} req/s" for s in servers)
    sep = "| --- | " + " | ".join("---:" for _ in servers)
    if has_moonport:
        peers = [s for s in servers if s != "moonport"]
        head += " | " + " | ".join(f"moonport / {LABEL[p]}" for p in peers)
        head += " | " + " | ".join(f"{LABEL[s]} CPU µs/req" for s in servers)
        sep += " | " + " | ".join("---:" for _ in peers) + " | " + " | ".join("---:" for _ in servers)
    else:
        head += " | " + " | ".join(f"{LABEL[s]} CPU µs/req" for s in servers)
        sep += " | " + " | ".join("---:" for _ in servers)
    w(head + " |")
    w(sep + " |")
    chart = ["scenario " + " ".join(LABEL[s] for s in servers)
             + " " + " ".join(LABEL[s] for s in servers)]
    for s in scenarios:
        cells = [f"{fmt_int(med(s, v, 'rps'))}{star(s, v)}{dagger(s, v)}" for v in servers]
        if has_moonport:
            cells += [f"{med(s, 'moonport', 'rps') / med(s, p, 'rps'):.2f}" for p in peers]
        cells += [f"{med(s, v, 'server_cpu_us_per_request'):.1f}" for v in servers]
        w(f"| {s} | " + " | ".join(cells) + " |")
        chart.append(s + " " + " ".join(f"{med(s, v, 'rps'):.0f}" for v in servers) + " "
                     + " ".join(f"{med(s, v, 'server_cpu_us_per_request'):.3f}" for v in servers))
    with open(os.path.join(work, "chart.dat"), "w") as f:
        f.write("\n".join(chart) + "\n")
    if any(star(sc, sv) for sc in scenarios for sv in servers):
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
      "is what pg_stat_statements counted per request served (a little above 1 or 20: wrk "
      "closes its connections with requests in flight, whose queries still ran); CPU 0 and "
      "CPU 1 busy are the two cores' use; other load is the CPU time of every other process "
      "on the machine plus time taken by the hypervisor (steal), in % of one CPU: the noise; "
      "errors are wrk's socket errors and non-2xx answers, summed over the rounds; req/s and "
      "the figures per request count 2xx answers only.")
    for s in scenarios:
        route, conns = SCENARIOS[s]
        w("")
        w(f"### {s}: `{route}`, {conns} connections")
        w("")
        w("| server | median req/s | min - max req/s | p50 ms | p99 ms | server CPU µs/req | "
          "DB CPU µs/req | statements | CPU 0 busy % | CPU 1 busy % | other load % | errors |")
        w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for v in servers:
            rps = [float(r["rps"]) for r in by[(s, v)]]
            w(f"| {LABEL[v]} | {fmt_int(statistics.median(rps))}{star(s, v)}{dagger(s, v)} | "
              f"{fmt_int(min(rps))} - {fmt_int(max(rps))} | "
              f"{med(s, v, 'p50_us') / 1000:.2f} | {med(s, v, 'p99_us') / 1000:.2f} | "
              f"{med(s, v, 'server_cpu_us_per_request'):.1f} | "
              f"{med(s, v, 'db_cpu_us_per_request'):.1f} | "
              f"{med(s, v, 'db_statements_per_request'):.2f} | "
              f"{med(s, v, 'server_core_busy_pct'):.0f} | "
              f"{med(s, v, 'wrk_core_busy_pct'):.0f} | "
              f"{med(s, v, 'other_cpu_pct'):.0f} | {errors(s, v)} |")
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
          "; ".join(f"{sc}: " + ", ".join(f"{LABEL[sv]} {upstream[(sc, sv)]}" for sv in servers
                                          if (sc, sv) in upstream)
                    for sc in scenarios) + ".")

    alloc_path = os.path.join(work, "alloc.txt")
    if os.path.exists(alloc_path) and os.path.getsize(alloc_path):
        w("")
        w("### Bytes allocated per request")
        w("")
        w("moonport's own counters (`--stats`): the mean over a wrk run of "
          f"{meta['duration']} s (32 connections) after a warm-up run, on a moonport of its own. "
          "Lua bytes are what the request's Lua code allocated (the handler, moonport.pg's rows "
          "and the JSON); C bytes what the core malloc'ed on its behalf (the mallocs column "
          "counts the worker's malloc calls during the run, the stats requests' own included).")
        w("")
        w("| route | Lua bytes | C bytes | mallocs in the worker meanwhile | requests |")
        w("| --- | ---: | ---: | ---: | ---: |")
        for line in open(alloc_path):
            parts = line.split()
            route = " ".join(parts[:2])
            kv = dict(p.split("=") for p in parts[2:])
            w(f"| `{route}` | {float(kv['lua']):,.1f} | {float(kv['c']):,.1f} | "
              f"{fmt_int(int(kv['mallocs']))} | {fmt_int(int(kv['requests']))} |")
    w("")
    w("Every round, requests per second and server CPU µs per request: " + "; ".join(
        f"{s} {LABEL[v]}: " + ", ".join(
            f"{float(r['rps']):,.0f} ({float(r['server_cpu_us_per_request']):.1f})"
            for r in by[(s, v)])
        for s in scenarios for v in servers) + ". Raw figures: [pg.csv](pg/pg.csv).")
    w("")
    with open(out_path, "w") as f:
        f.write("\n".join(lines))
    return 0


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd = sys.argv[1]
    if cmd == "check":
        try:
            return check(int(sys.argv[2]), sys.argv[3])
        except (OSError, ValueError) as e:
            print(f"  WRONG: {type(e).__name__}: {e}")
            return 1
    if cmd == "alloc":
        if sys.argv[4] != "--":
            sys.exit(__doc__)
        return alloc(int(sys.argv[2]), sys.argv[3], sys.argv[5:])
    if cmd == "report":
        p = argparse.ArgumentParser()
        p.add_argument("--work", required=True)
        p.add_argument("--csv", required=True)
        p.add_argument("--out", required=True)
        a = p.parse_args(sys.argv[2:])
        return report(a.work, a.csv, a.out)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
