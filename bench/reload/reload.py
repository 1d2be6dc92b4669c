#!/usr/bin/env python3
"""Hot reload, measured (run by bench/reload/run).

1. Save to first new answer: the app in a scratch directory answers
   GET /v with its version; each of N saves (a new file renamed over the
   app, as editors do) writes the next version, and a client polling one
   keep-alive connection as fast as it can records the time from just
   before the rename to the first response with the new version.
2. Under load: wrk with 32 connections on GET /v, once without saves and
   once with a save every 200 ms, interleaved over rounds; non-2xx
   responses and socket errors counted, requests per second compared as a
   ratio of medians.
3. 100 reloads in a row: the RSS of the whole process tree (master and
   workers) before and after, each reload waited for.

The server is pinned to CPU 0 and wrk to CPU 1. Prints a Markdown section.
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import moonport_proc  # noqa: E402
from http_client import get_request, parse_response, tree_rss_kb  # noqa: E402

APP = """local app = require("moonport").app()
local version = {version!r}
app:get("/v", function(req, res) res:send(version) end)
return app
"""


def save(path, version):
    tmp = path + ".swp"
    with open(tmp, "w") as f:
        f.write(APP.format(version=version))
    os.rename(tmp, path)


class Client:
    """One keep-alive connection, reconnecting when the server closes it."""

    def __init__(self, port):
        self.port = port
        self.sock = None
        self.req = get_request("/v", port)

    def get(self):
        for _ in range(3):
            try:
                if self.sock is None:
                    self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                    self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.sock.sendall(self.req)
                buf = b""
                while True:
                    got = parse_response(buf)
                    if got:
                        return got[0].status, got[0].body.decode()
                    chunk = self.sock.recv(65536)
                    if not chunk:
                        raise ConnectionError("closed")
                    buf += chunk
            except OSError:
                if self.sock:
                    self.sock.close()
                self.sock = None
        raise RuntimeError("server does not answer")


def start(binary, app, workers):
    return moonport_proc.start(
        ["taskset", "-c", "0", binary, "--listen", "127.0.0.1:0", "--workers", str(workers), app])


def wait_for(client, version, timeout=5.0):
    """Seconds until GET /v answers `version`."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        status, body = client.get()
        if status == 200 and body == version:
            return time.perf_counter() - t0
    raise RuntimeError(f"version {version} never served")


def latency(binary, app, workers, edits):
    proc, port = start(binary, app, workers)
    try:
        client = Client(port)
        wait_for(client, "v0")
        samples = []
        for i in range(1, edits + 1):
            time.sleep(0.2)  # apart from the last reload
            t0 = time.perf_counter()
            save(app, f"v{i}")
            wait_for(client, f"v{i}")
            samples.append((time.perf_counter() - t0) * 1000)
        return samples
    finally:
        proc.terminate()
        proc.wait(10)


def wrk(port, seconds):
    out = subprocess.run(
        ["taskset", "-c", "1", "wrk", "-t1", "-c32", f"-d{seconds}s", "--timeout", "5s",
         "-s", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "wrk", "measure.lua"),
         f"http://127.0.0.1:{port}/v"], capture_output=True, text=True, check=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("RESULT "))
    kv = dict(p.split("=") for p in line.split()[1:])
    return {"rps": int(kv["requests"]) / (int(kv["duration_us"]) / 1e6),
            "non2xx": int(kv["status"]),
            "socket_errors": sum(int(kv[k]) for k in ("connect", "read", "write", "timeout"))}


def under_load(binary, app, workers, rounds, seconds, every):
    proc, port = start(binary, app, workers)
    runs = {"quiet": [], "saving": []}
    saves = [0]
    try:
        wait_for(Client(port), "v0")
        wrk(port, 2)  # warm-up
        for r in range(rounds):
            order = ["quiet", "saving"] if r % 2 == 0 else ["saving", "quiet"]
            for kind in order:
                stop = threading.Event()

                def saver():
                    while not stop.wait(every):
                        saves[0] += 1
                        save(app, f"s{saves[0]}")

                t = threading.Thread(target=saver) if kind == "saving" else None
                if t:
                    t.start()
                runs[kind].append(wrk(port, seconds))
                if t:
                    stop.set()
                    t.join()
        return runs, saves[0]
    finally:
        proc.terminate()
        proc.wait(10)


def rss(binary, app, workers, reloads):
    proc, port = start(binary, app, workers)
    try:
        client = Client(port)
        wait_for(client, "v0")
        for i in range(1, 4):  # first reloads touch code paths once
            save(app, f"w{i}")
            wait_for(client, f"w{i}")
        before = tree_rss_kb(proc.pid)
        for i in range(1, reloads + 1):
            save(app, f"r{i}")
            wait_for(client, f"r{i}")
        time.sleep(0.1)  # old states close on the loop turn after their last request
        after = tree_rss_kb(proc.pid)
        return before, after
    finally:
        proc.terminate()
        proc.wait(10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--reloads", type=int, default=100)
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="moonport-reload.")
    app = os.path.join(work, "app.lua")
    try:
        save(app, "v0")
        lat = latency(args.binary, app, args.workers, args.edits)
        save(app, "v0")
        runs, nsaves = under_load(args.binary, app, args.workers, args.rounds, args.seconds, 0.2)
        save(app, "v0")
        before, after = rss(args.binary, app, args.workers, args.reloads)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    quiet = statistics.median(r["rps"] for r in runs["quiet"])
    saving = statistics.median(r["rps"] for r in runs["saving"])
    bad = sum(r["non2xx"] for r in runs["saving"])
    errs = sum(r["socket_errors"] for r in runs["saving"])
    med = statistics.median(lat)
    print(f"- Save to first response from the new code, {args.edits} edits (rename-saves 0.2 s "
          f"apart, {args.workers} worker{'s' if args.workers > 1 else ''}): median "
          f"**{med:.1f} ms**, min {min(lat):.1f}, max {max(lat):.1f} (target ≤ 100 ms: "
          f"{'met' if med <= 100 else 'not met'}). The default --watch-delay of 50 ms is most of it.")
    print(f"  Samples (ms): {', '.join(f'{x:.1f}' for x in lat)}.")
    print(f"- Under load (wrk, 32 connections, GET /v, {args.rounds} interleaved rounds of "
          f"{args.seconds} s each way; {nsaves} saves, one every 200 ms while saving): "
          f"**{saving:,.0f}** req/s with saves vs **{quiet:,.0f}** without, "
          f"**{saving / quiet:.1%}** (target ≥ 90%: {'met' if saving / quiet >= 0.9 else 'not met'}); "
          f"non-2xx responses **{bad}**, socket errors **{errs}** "
          f"(target 0 and 0: {'met' if bad == 0 and errs == 0 else 'not met'}).")
    def rounds(kind):
        return ", ".join(f"{r['rps']:,.0f}" for r in runs[kind])
    print(f"  Rounds, req/s: without saves {rounds('quiet')}; with saves {rounds('saving')}.")
    print(f"- {args.reloads} reloads in a row: RSS of master and worker "
          f"{before / 1024:.2f} MiB before, {after / 1024:.2f} MiB after "
          f"({(after - before):+d} KiB).")


if __name__ == "__main__":
    main()
