#!/usr/bin/python3
"""Write RESULTS.md and the chart's data from one run's raw figures.

  report.py --work DIR --csv FILE --out FILE --csv-name results.csv
            --png-name results.png --servers S1,S2,.. --scenarios N1,N2,..

--csv is the per-round CSV to read; --csv-name and --png-name are the
names RESULTS.md links to (files beside it).

DIR holds what bench/run gathered: meta.tsv (key TAB value, in order),
startup.txt ("SERVER MS,MS,.."), memory.txt ("SERVER idle_kb=.. ..").
The chart's data goes to DIR/chart.dat for bench/lib/chart.gp."""

import argparse
import csv
import os
import re
import statistics
from collections import defaultdict

ROUTE_PATH = {"hello": "/hello", "users": "/users/42"}

# At or above this, wrk's core was saturated: the load generator may have
# set the pace, and the server's figure is then a lower bound.
WRK_BOUND_PCT = 95
WRK_BOUND_NOTE = (f"\\* wrk's core (CPU 1) was at least {WRK_BOUND_PCT}% busy: the "
                  "load generator may have set the pace, so this figure is a lower "
                  "bound for the server, and a ratio involving it is uncertain.")


def read_meta(path):
    meta = []
    with open(path) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("\t")
            meta.append((key, value))
    return meta


def read_rounds(path):
    """{(scenario, server): [row, ...]} in round order."""
    rounds = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            rounds[(row["scenario"], row["server"])].append(row)
    return rounds


def read_kv_lines(path):
    """{server: {key: value}} from lines "SERVER k=v k=v"."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            server, *pairs = line.split()
            out[server] = dict(p.split("=", 1) for p in pairs)
    return out


def read_startup(path):
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            server, samples = line.split()
            out[server] = [float(x) for x in samples.split(",")]
    return out


def rate(x):
    return f"{x:,.0f}"


def median_rate(st):
    """The median req/s, starred when the load generator may have capped it."""
    return rate(st["median"]) + ("\\*" if st["wrk_core"] >= WRK_BOUND_PCT else "")


def ms(us):
    return f"{us / 1000:.3f}"


def scenario_title(name, rows):
    route = name.split("-")[0]
    first = rows[0]
    depth = int(first["pipeline"])
    shape = f"{first['connections']} connections"
    if depth > 1:
        shape += f", {depth} requests pipelined per write"
    return f"GET {ROUTE_PATH[route]}, {shape}"


def summarize(rows):
    rps = [float(r["rps"]) for r in rows]
    errors = sum(int(r[k]) for r in rows for k in r if k.startswith("errors_"))
    return {
        "median": statistics.median(rps),
        "min": min(rps),
        "max": max(rps),
        "p50": statistics.median(float(r["p50_us"]) for r in rows),
        "p99": statistics.median(float(r["p99_us"]) for r in rows),
        "errors": errors,
        "rounds": len(rows),
        "server_core": statistics.median(float(r["server_core_busy_pct"]) for r in rows),
        "wrk_core": statistics.median(float(r["wrk_core_busy_pct"]) for r in rows),
        "other_cpu": statistics.median(float(r["other_cpu_pct"]) for r in rows),
    }


def throughput_section(scenarios, servers, rounds):
    lines = []
    stats = {}
    for name in scenarios:
        for server in servers:
            rows = rounds.get((name, server))
            if rows:
                stats[(name, server)] = summarize(rows)
    present = [s for s in servers if any((n, s) in stats for n in scenarios)]

    lines += ["## Requests per second", "",
              "Median over the rounds; the second table is moonport's median "
              "divided by each server's (above 1: moonport served more).", ""]
    lines.append("| scenario | " + " | ".join(present) + " |")
    lines.append("| --- |" + " ---: |" * len(present))
    for name in scenarios:
        cells = [median_rate(stats[(name, s)]) if (name, s) in stats else "-"
                 for s in present]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    if any(st["wrk_core"] >= WRK_BOUND_PCT for st in stats.values()):
        lines += [WRK_BOUND_NOTE, ""]
    peers = [s for s in present if s != "moonport"]
    if peers:
        lines.append("| moonport / server | " + " | ".join(peers) + " |")
        lines.append("| --- |" + " ---: |" * len(peers))
        for name in scenarios:
            base = stats.get((name, "moonport"))
            cells = [f"{base['median'] / stats[(name, s)]['median']:.2f}"
                     if base and (name, s) in stats else "-" for s in peers]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")

    lines += ["In the tables below, every figure is the median over the rounds: "
              "p50 and p99 are each round's latency percentiles (wrk, per "
              "request); CPU 0 busy is the share of the servers' core in use "
              "(processes and the kernel's network work), CPU 1 busy the same "
              "for wrk's core: near 100 on CPU 1 but not on CPU 0 means the "
              "load generator, not the server, set the pace. Other load is the "
              "CPU time of every other process on the machine plus time taken "
              "by the hypervisor (steal), in % of one CPU: the noise. Errors "
              "are wrk's socket errors and non-2xx answers, summed over the "
              "rounds.", ""]
    for name in scenarios:
        rows = [(s, stats[(name, s)]) for s in present if (name, s) in stats]
        if not rows:
            continue
        pipelined = int(rounds[(name, rows[0][0])][0]["pipeline"]) > 1
        lines += [f"### {name}: {scenario_title(name, rounds[(name, rows[0][0])])}", ""]
        head = "| server | median req/s | moonport / server |"
        rule = "| --- | ---: | ---: |"
        if not pipelined:
            head += " p50 ms | p99 ms |"
            rule += " ---: | ---: |"
        head += " min - max req/s | CPU 0 busy % | CPU 1 busy % | other load % | errors |"
        rule += " ---: | ---: | ---: | ---: | ---: |"
        lines += [head, rule]
        base = stats.get((name, "moonport"))
        for server, st in rows:
            ratio = f"{base['median'] / st['median']:.2f}" if base else "-"
            cells = [server, median_rate(st), ratio]
            if not pipelined:
                cells += [ms(st["p50"]), ms(st["p99"])]
            cells += [f"{rate(st['min'])} - {rate(st['max'])}", f"{st['server_core']:.0f}",
                      f"{st['wrk_core']:.0f}", f"{st['other_cpu']:.0f}", str(st["errors"])]
            lines.append("| " + " | ".join(cells) + " |")
        if any(st["wrk_core"] >= WRK_BOUND_PCT for _, st in rows):
            lines += ["", WRK_BOUND_NOTE]
        if pipelined:
            lines += ["", "Latency is not shown: with pipelining wrk records one "
                      "sample per batch of requests, not per request."]
        lines.append("")
    return lines, stats, present


def startup_section(startup):
    if not startup:
        return []
    lines = ["## Start to first answer", "",
             "Wall time from just before the exec to the first 200 on "
             "GET /users/42 (moonport with scripts/api.lua), process pinned to "
             "CPU 0; median of the runs.", "",
             "| server | median ms | min ms | max ms | runs | samples (ms) |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    for server, samples in startup.items():
        lines.append(f"| {server} | {statistics.median(samples):.1f} | {min(samples):.1f} "
                     f"| {max(samples):.1f} | {len(samples)} | "
                     + ", ".join(f"{x:.1f}" for x in samples) + " |")
    return lines + [""]


def memory_section(memory):
    if not memory:
        return []
    count = next(iter(memory.values()))["count"]
    lines = ["## Memory", "",
             f"VmRSS of a fresh server (moonport with scripts/api.lua) after 100 "
             f"requests on one connection (idle), then with {int(count):,} idle "
             f"keep-alive connections open (each sent one GET /users/42 and read "
             f"its answer), then after they closed. For nginx, master and worker "
             f"together. 1 MiB = 1024 KiB.", "",
             "| server | idle RSS MiB | RSS with connections MiB | bytes per idle connection "
             "| RSS after closing MiB | connections still open |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for server, m in memory.items():
        idle, opened, closed = (int(m[k]) for k in ("idle_kb", "open_kb", "closed_kb"))
        per_conn = (opened - idle) * 1024 / int(m["count"])
        lines.append(f"| {server} | {idle / 1024:.1f} | {opened / 1024:.1f} | "
                     f"{per_conn:,.0f} | {closed / 1024:.1f} | "
                     f"{int(m['still_open']):,} of {int(m['count']):,} |")
    return lines + [""]


UNMET_NOTE = ('What stands in the way where a target is not met. Without pipelining, one wrk thread on one core sets the pace: moonport, OpenResty and nginx\'s C `return 200` then all land within a few percent of one another with wrk\'s core saturated (nginx-static\'s hello-32 figure is that ceiling), and a minimal epoll loop that parses nothing did no better; the requests-per-second ratios there (and the 3× Node and 30× FastAPI readings, which would need wrk to go far past that ceiling) measure the load generator. The servers\' own work is in "Where the time goes": moonport spends about a third of OpenResty\'s user-space instructions on /hello and under half on /users/42, while the kernel\'s share (read, write, epoll: the same calls per request in both) is most of a request\'s CPU, so user-space savings show only where the server\'s core is the bottleneck, as with pipelining. p99 at 32 connections is mostly queueing inside wrk, whose core is saturated, which caps the FastAPI latency ratio.')


def targets_section(stats, startup):
    """The speed targets moonport holds itself to, each with its verdict."""
    def ratio(scenario, peer, key="median"):
        a, b = stats.get((scenario, "moonport")), stats.get((scenario, peer))
        if not a or not b:
            return None
        return a[key] / b[key] if key == "median" else b[key] / a[key]

    def bound(scenario):
        st = stats.get((scenario, "moonport"))
        return st is not None and st["wrk_core"] >= WRK_BOUND_PCT

    rows = []

    def add(target, value, goal, shown, scenario=None):
        if value is None:
            return
        verdict = "met" if value >= goal else "not met"
        if verdict == "not met" and scenario and bound(scenario):
            verdict += " (wrk-bound\\*)"
        rows.append(f"| {target} | {shown} | {verdict} |")

    add("`/hello`, 32 connections: ≥ 1.2× OpenResty", ratio("hello-32", "openresty"), 1.2,
        f"{ratio('hello-32', 'openresty') or 0:.2f}×", "hello-32")
    add("`/users/42`, 32 connections: ≥ 1.2× OpenResty", ratio("users-32", "openresty"), 1.2,
        f"{ratio('users-32', 'openresty') or 0:.2f}×", "users-32")
    add("16 pipelined `/hello` per connection: ≥ 5× OpenResty",
        ratio("hello-pipeline", "openresty"), 5, f"{ratio('hello-pipeline', 'openresty') or 0:.2f}×")
    add("16 pipelined `/users/42` per connection: ≥ 5× OpenResty",
        ratio("users-pipeline", "openresty"), 5, f"{ratio('users-pipeline', 'openresty') or 0:.2f}×")
    for scenario in ("hello-32", "users-32"):
        r = ratio(scenario, "openresty", "p99")
        if r is not None:
            mp = stats[(scenario, "moonport")]["p99"]
            orr = stats[(scenario, "openresty")]["p99"]
            add(f"p99 at 32 connections ({scenario}) ≤ OpenResty's", r, 1,
                f"{ms(mp)} ms against {ms(orr)} ms")
    for peer, goal in (("node", 3), ("fastapi", 30)):
        r = ratio("hello-32", peer)
        add(f"`/hello`, 32 connections: ≥ {goal}× {peer}, requests per second", r, goal,
            f"{r or 0:.2f}×", "hello-32")
        r = ratio("hello-32", peer, "p99")
        add(f"`/hello`, 32 connections: ≥ {goal}× {peer}, read as p99 latency", r, goal,
            f"{r or 0:.2f}× lower")
    if "moonport" in startup:
        first = statistics.median(startup["moonport"])
        add("first answered request ≤ 50 ms after start", 50 / first, 1, f"{first:.1f} ms")
    if not rows:
        return []
    return ["## Targets", "",
            "The speed targets of the benchmark issue, checked against this run's "
            "medians. A target marked wrk-bound was measured while the load "
            "generator's core was saturated: every efficient server then gets "
            "the same figure (see the note under the first table), so the ratio "
            "says more about wrk than about the servers; the CPU and instruction "
            "figures below compare the servers' own work.", "",
            "| target | this run | verdict |", "| --- | --- | --- |"] + rows + [""] + (
                [UNMET_NOTE, ""] if any("not met" in r for r in rows) else [])


def profile_section(path):
    """A section another script wrote (bench/workers/WORKERS.md,
    bench/reload/RELOAD.md, bench/mock/MOCK.md, bench/slowloris/SLOWLORIS.md,
    bench/redis/REDIS.md, bench/tfb/TFB.md, bench/http/HTTP.md,
    bench/profile/PROFILE.md), when it has been made."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [f.read().rstrip(), ""]


# The budget spec/integration/alloc_spec.lua enforces (also in README.md).
BUDGET = {"GET /hello": 0, "GET /health": 256, "GET /users/:id": 512,
          "GET /search": 512, "POST /add": 1024}


def bigbody_section(path):
    """moonport's large-body figures, from bench/lib/bigbody.sh's lines."""
    if not os.path.exists(path):
        return []
    rows = []
    with open(path) as f:
        for line in f:
            kind, *pairs = line.split()
            m = dict(p.split("=", 1) for p in pairs)
            what = ("GET, written in 64 KiB pieces with res:write" if kind == "download"
                    else "PUT, chunked, read with req:read")
            rows.append(f"| {kind} | {what} | {float(m['mb_s']) / 1000:.2f} | "
                        f"{int(m['growth_kb']):,} | {m['runs'].replace(',', ', ')} |")
    return ["## Large bodies", "",
            "moonport with bench/lib/bigbody.lua moving 512 MiB over loopback with "
            "curl (server on CPU 0, curl on CPU 1); the median of the transfers, and "
            "how far the server's RSS rose above where it was (its peak, VmHWM, "
            "reset before the transfers).", "",
            "| transfer | how | GB/s | RSS growth KiB | each run, MB/s |",
            "| --- | --- | ---: | ---: | --- |"] + rows + [""]


def alloc_section(path):
    """moonport's bytes per request, from bench/lib/alloc.py's lines."""
    if not os.path.exists(path):
        return []
    rows, mallocs = [], 0
    with open(path) as f:
        for line in f:
            if line.startswith("mallocs "):
                mallocs += int(line.split()[2])
                continue
            m = re.match(r"(\S+ \S+) lua=(\S+) c=(\S+) requests=(\d+)", line)
            if not m:
                continue
            name, lua, c, n = m.groups()
            budget = BUDGET.get(name)
            rows.append(f"| `{name}` | {float(lua):,.1f} | {float(c):,.1f} | "
                        f"{budget if budget is not None else '-':,} | {int(n):,} |")
    if not rows:
        return []
    return ["## Bytes allocated per request", "",
            "moonport's own counters (`--stats`), for each route of scripts/hello.lua "
            "and scripts/api.lua: the mean over 10,000 requests after 1,000 of "
            "warm-up. Lua bytes are what the handler's Lua heap handed out; C bytes "
            "what the core malloc'ed for the request. The core made "
            f"{mallocs} malloc calls while these requests were served (stats "
            "requests included). The budget is what the test suite enforces.", "",
            "| route | Lua bytes | C bytes | Lua budget | requests |",
            "| --- | ---: | ---: | ---: | ---: |"] + rows + [""]


def write_chart_data(path, scenarios, present, stats):
    with open(path, "w") as f:
        f.write("scenario " + " ".join(present) + "\n")
        for name in scenarios:
            cells = [f"{stats[(name, s)]['median']:.0f}" if (name, s) in stats else "-"
                     for s in present]
            f.write(name + " " + " ".join(cells) + "\n")


def main():
    parser = argparse.ArgumentParser()
    for opt in ("--work", "--csv", "--out", "--csv-name", "--png-name", "--servers",
                "--scenarios"):
        parser.add_argument(opt, required=True)
    args = parser.parse_args()
    servers = args.servers.split(",")
    scenarios = args.scenarios.split(",")

    meta = read_meta(os.path.join(args.work, "meta.tsv"))
    rounds = read_rounds(args.csv)
    startup = read_startup(os.path.join(args.work, "startup.txt"))
    memory = read_kv_lines(os.path.join(args.work, "memory.txt"))

    lines = ["# moonport benchmark results", ""]
    lines += ["| | |", "| --- | --- |"]
    lines += [f"| {k} | {v} |" for k, v in meta]
    lines.append("")
    body, stats, present = throughput_section(scenarios, servers, rounds)
    if stats:
        lines += [f"![median requests per second]({args.png_name})", ""]
        write_chart_data(os.path.join(args.work, "chart.dat"), scenarios, present, stats)
    lines += targets_section(stats, startup)
    lines += body
    lines += startup_section(startup)
    lines += memory_section(memory)
    lines += bigbody_section(os.path.join(args.work, "bigbody.txt"))
    lines += alloc_section(os.path.join(args.work, "alloc.txt"))
    here = os.path.dirname(os.path.abspath(__file__))
    lines += profile_section(os.path.join(here, "..", "workers", "WORKERS.md"))
    lines += profile_section(os.path.join(here, "..", "reload", "RELOAD.md"))
    lines += profile_section(os.path.join(here, "..", "mock", "MOCK.md"))
    lines += profile_section(os.path.join(here, "..", "slowloris", "SLOWLORIS.md"))
    lines += profile_section(os.path.join(here, "..", "redis", "REDIS.md"))
    lines += profile_section(os.path.join(here, "..", "tfb", "TFB.md"))
    lines += profile_section(os.path.join(here, "..", "http", "HTTP.md"))
    lines += profile_section(os.path.join(here, "..", "profile", "PROFILE.md"))
    lines += [f"Raw per-round figures: [{args.csv_name}]({args.csv_name}). "
              "How the figures are taken: bench/README.md.", ""]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
