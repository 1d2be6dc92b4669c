#!/usr/bin/python3
"""Bytes allocated per request, per route, from moonport's own counters.

  alloc.py BIN ROOT

Starts BIN with --stats for scripts/hello.lua and scripts/api.lua (pinned
to CPU 0), warms each route up with 1,000 requests, sends 10,000 more
(100 pipelined per write on one connection), and prints one line per route
from the stats endpoint's before-and-after difference:

  METHOD PATTERN lua=<mean Lua bytes> c=<mean C bytes> requests=N

and one line per app, "mallocs APP M": the core's malloc calls during the
whole measured phase, the stats requests' own included. The same figures are held to a budget by
spec/integration/alloc_spec.lua."""

import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_client import connect, exchange, get_request  # noqa: E402

ROUTES = {
    "scripts/hello.lua": [("GET /hello", "GET", "/hello", None)],
    "scripts/api.lua": [
        ("GET /health", "GET", "/health", None),
        ("GET /users/:id", "GET", "/users/42", None),
        ("GET /search", "GET", "/search?q=a+b+c%C3%A9", None),
        ("POST /add", "POST", "/add", b'{"a":1,"b":2}'),
    ],
}
WARM_UP = 1000
MEASURED = 10000
BATCH = 100


def request(method, path, body, port):
    if body is None:
        return get_request(path, port) if method == "GET" else None
    head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


def stats(port):
    with connect(port, 10) as sock:
        (response,) = exchange(sock, get_request("/__moonport/stats", port), 1, 10)
    doc = json.loads(response.body)
    return doc, {r["method"] + " " + r["pattern"]: r for r in doc["routes"]}


def blast(port, payload, count):
    with connect(port, 10) as sock:
        for _ in range(count // BATCH):
            for response in exchange(sock, payload * BATCH, BATCH, 10):
                if response.status != 200:
                    raise SystemExit(f"unexpected status {response.status}")


def measure(binary, app):
    proc = subprocess.Popen(["taskset", "-c", "0", binary, "--stats",
                             "--listen", "127.0.0.1:0", app],
                            stdout=subprocess.PIPE, text=True)
    try:
        port = int(re.search(r":(\d+) \(", proc.stdout.readline()).group(1))
        routes = [(name, request(m, p, b, port)) for name, m, p, b in ROUTES[app]]
        for _, payload in routes:
            blast(port, payload, WARM_UP)
        stats(port)  # the stats path warms up too
        before_doc, before = stats(port)
        for _, payload in routes:
            blast(port, payload, MEASURED)
        after_doc, after = stats(port)
        mallocs = after_doc["worker"]["mallocs"] - before_doc["worker"]["mallocs"]
        for name, _ in routes:
            n = after[name]["count"] - before[name]["count"]
            lua = (after[name]["lua_bytes"]["total"] - before[name]["lua_bytes"]["total"]) / n
            c = (after[name]["c_bytes"]["total"] - before[name]["c_bytes"]["total"]) / n
            print(f"{name} lua={lua:.1f} c={c:.1f} requests={n}")
        print(f"mallocs {app} {mallocs}")
    finally:
        proc.terminate()
        proc.wait(10)


def main():
    binary, root = sys.argv[1], sys.argv[2]
    os.chdir(root)
    for app in ROUTES:
        measure(binary, app)


if __name__ == "__main__":
    main()
