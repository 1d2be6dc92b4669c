"""What the peer benchmarks' helper scripts (bench/redis/redis.py,
bench/tfb/tfb.py, bench/http/http.py) share: one GET, moonport's per-route allocation figures
around a load run, the small pieces of their reports, and their command
line."""

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

from http_client import connect, exchange, get_request


def get(port, path, timeout=10):
    """One GET on a fresh connection; the parsed response."""
    with connect(port, timeout) as sock:
        (response,) = exchange(sock, get_request(path, port), 1, timeout)
    return response


def stats(port):
    """moonport's stats document, and its routes by "METHOD pattern"."""
    doc = json.loads(get(port, "/__moonport/stats").body)
    return doc, {r["method"] + " " + r["pattern"]: r for r in doc["routes"]}


def alloc(port, route, command):
    """Runs command (a load run) and prints route's mean Lua and C bytes
    per request meanwhile, and the worker's mallocs."""
    before_doc, before = stats(port)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    after_doc, after = stats(port)
    n = after[route]["count"] - before.get(route, {"count": 0})["count"]
    b = before.get(route, {"lua_bytes": {"total": 0}, "c_bytes": {"total": 0}})
    lua = (after[route]["lua_bytes"]["total"] - b["lua_bytes"]["total"]) / n
    c = (after[route]["c_bytes"]["total"] - b["c_bytes"]["total"]) / n
    mallocs = after_doc["worker"]["mallocs"] - before_doc["worker"]["mallocs"]
    print(f"{route} lua={lua:.1f} c={c:.1f} requests={n} mallocs={mallocs}")
    return 0


def fmt_int(x):
    return f"{x:,.0f}"


def read_tsv(path):
    """A file of "key<TAB>value" lines as a dict; {} when there is none."""
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                key, _, val = line.rstrip("\n").partition("\t")
                out[key] = val
    return out


def read_runs(work, csv_path):
    """The measured runs of CSV by (scenario, server), and the upstream
    connections DIR/upstream.tsv recorded by (scenario, server)."""
    by = {}
    for row in csv.DictReader(open(csv_path)):
        by.setdefault((row["scenario"], row["server"]), []).append(row)
    upstream = {}
    path = os.path.join(work, "upstream.tsv")
    if os.path.exists(path):
        for line in open(path):
            scenario, server, n = line.split()
            upstream[(scenario, server)] = n
    return by, upstream


def median_of(by, scenario, server, key):
    """The median of key over a scenario's runs of a server."""
    return statistics.median(float(r[key]) for r in by[(scenario, server)])


def star(by, scenario, server):
    """A star (Markdown-escaped) when a run that makes the median had CPU 1
    (wrk and the upstream) at least 95% busy: the load side may have set
    the pace, so the figure is a lower bound for the server."""
    rs = sorted(by[(scenario, server)], key=lambda r: float(r["rps"]))
    mid = [rs[(len(rs) - 1) // 2], rs[len(rs) // 2]]
    return "\\*" if any(float(r["wrk_core_busy_pct"]) >= 95 for r in mid) else ""


def heading(title, meta):
    """A report's first lines: "## title", and the command that made it,
    when, on what machine."""
    return [f"## {title}", "",
            f"Command: `{meta['command']}`, {meta['date']}, {meta['cpu']}, kernel {meta['kernel']}."]


def errors(by, scenario, server):
    """wrk's socket errors and non-2xx answers over a scenario's runs of a
    server (0 when it has none)."""
    return sum(int(r[k]) for r in by.get((scenario, server), [])
               for k in ("errors_connect", "errors_read", "errors_write",
                         "errors_status", "errors_timeout"))


def every_round(by, scenarios, servers, label, digits):
    """The line that lists every round's requests per second and server CPU
    µs per request (with digits decimals), by scenario and server."""
    return "Every round, requests per second and server CPU µs per request: " + "; ".join(
        f"{s} {label[v]}: " + ", ".join(
            f"{float(r['rps']):,.0f} ({float(r['server_cpu_us_per_request']):.{digits}f})"
            for r in by[(s, v)])
        for s in scenarios for v in servers if (s, v) in by) + "."


def detail_table(by, scenario, title, servers, label, mark, columns):
    """A scenario's subsection: "### title", then a Markdown row per
    server that ran it: its label, its median requests per second (then
    mark(server)) and their range, the median of each (title, key,
    divisor, decimals) of columns, divided and with that many decimals, and
    its errors."""
    lines = ["", f"### {title}", "",
             "| server | median req/s | min - max req/s | "
             + " | ".join(c[0] for c in columns) + " | errors |",
             "| --- | ---: | ---: | " + " | ".join("---:" for _ in columns) + " | ---: |"]
    for v in servers:
        if (scenario, v) not in by:
            continue
        rps = [float(r["rps"]) for r in by[(scenario, v)]]
        cells = [label[v], f"{fmt_int(statistics.median(rps))}{mark(v)}",
                 f"{fmt_int(min(rps))} - {fmt_int(max(rps))}"]
        cells += [f"{median_of(by, scenario, v, key) / divisor:.{digits}f}"
                  for _, key, divisor, digits in columns]
        cells.append(str(errors(by, scenario, v)))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def pools(upstream, scenarios, servers, label):
    """The connections to the upstream each server held, by scenario:
    "get: moonport 32, OpenResty 32; pipeline: ..." (scenarios without any
    left out)."""
    return "; ".join(f"{sc}: " + ", ".join(f"{label[sv]} {upstream[(sc, sv)]}" for sv in servers
                                          if (sc, sv) in upstream)
                     for sc in scenarios if any((sc, sv) in upstream for sv in servers))


def alloc_section(work, meta, lua, c="", budget="", budgets=None):
    """The "Bytes allocated per request" subsection from DIR/alloc.txt
    (none without it): what the figures are, lua saying what the request's
    Lua code allocated and c what more the C bytes hold, the budget's
    sentence, and the table (alloc_table with budgets)."""
    allocated = alloc_lines(os.path.join(work, "alloc.txt"))
    if not allocated:
        return []
    return ["", "### Bytes allocated per request", "",
            "moonport's own counters (`--stats`): the mean over a wrk run of "
            f"{meta['duration']} s ({meta.get('connections', 32)} connections) after a warm-up "
            f"run, on a moonport of its own. Lua bytes are what the request's Lua code allocated "
            f"({lua}); C bytes what the core malloc'ed on its behalf{c} (the mallocs column "
            "counts the worker's malloc calls during the run, the stats requests' own included)."
            + (" " + budget if budget else ""), ""] + alloc_table(allocated, budgets)


def finish(lines, out_path, by, scenarios, servers, label, digits, csv_link):
    """Ends a report with every round's figures (every_round) and a link to
    the raw CSV, and writes it to out_path."""
    lines += ["", every_round(by, scenarios, servers, label, digits)
              + f" Raw figures: {csv_link}.", ""]
    with open(out_path, "w") as f:
        f.write("\n".join(lines))
    return 0


def alloc_table(allocated, budgets=None):
    """The Markdown table of alloc_lines' figures; with budgets (route ->
    text), a budget column ("-" for a route without one)."""
    head = "| route | Lua bytes | C bytes | mallocs in the worker meanwhile | requests |"
    rule = "| --- | ---: | ---: | ---: | ---: |"
    if budgets is not None:
        head += " budget (Lua, C) |"
        rule += " ---: |"
    rows = [head, rule]
    for route, kv in allocated:
        row = (f"| `{route}` | {float(kv['lua']):,.1f} | {float(kv['c']):,.1f} | "
               f"{fmt_int(int(kv['mallocs']))} | {fmt_int(int(kv['requests']))} |")
        if budgets is not None:
            row += f" {budgets.get(route, '-')} |"
        rows.append(row)
    return rows


def alloc_lines(path):
    """The lines `alloc` printed into path, as (route, {"lua", "c",
    "mallocs", "requests"}) pairs; none when there is no such file."""
    if not os.path.exists(path):
        return []
    out = []
    for line in open(path):
        parts = line.split()
        out.append((" ".join(parts[:2]), dict(p.split("=") for p in parts[2:])))
    return out


def main(doc, report, check=None):
    """The commands of a peer benchmark's helper script (doc, its
    docstring, says them): check PORT (when the script has one), alloc
    PORT ROUTE -- LOAD_COMMAND..., report --work DIR --csv CSV --out OUT."""
    if len(sys.argv) < 2:
        sys.exit(doc)
    cmd = sys.argv[1]
    if cmd == "check" and check is not None:
        return check(int(sys.argv[2]))
    if cmd == "alloc":
        if sys.argv[4] != "--":
            sys.exit(doc)
        return alloc(int(sys.argv[2]), sys.argv[3], sys.argv[5:])
    if cmd == "report":
        p = argparse.ArgumentParser()
        p.add_argument("--work", required=True)
        p.add_argument("--csv", required=True)
        p.add_argument("--out", required=True)
        a = p.parse_args(sys.argv[2:])
        return report(a.work, a.csv, a.out)
    sys.exit(doc)
