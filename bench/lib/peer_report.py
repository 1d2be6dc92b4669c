"""What the peer benchmarks' helper scripts (bench/redis/redis.py,
bench/tfb/tfb.py) share: one GET, moonport's per-route allocation figures
around a load run, and the small pieces of their reports."""

import json
import os
import subprocess

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
