#!/usr/bin/env python3
"""A normal client's latency beside a slowloris crowd (run by
bench/slowloris/run).

One client asks GET /hello over one keep-alive connection, one request at
a time, for a number of seconds: first alone ("quiet"), then while a crowd
of connections each trickle one byte of a request head that never ends,
one byte per connection every half second ("crowd"). The server runs with
a --header-timeout longer than the measurement, so the crowd stays for all
of it. The server is pinned to CPU 0; this script (client and crowd) to
CPU 1. Prints a Markdown section: p50, p99 and max per phase.

The integration spec (spec/integration/load_spec.lua) checks the order of
things under a crowd: the normal client is answered before any slow
connection ends. The latency itself depends on the machine, so it is
measured here and not asserted there.
"""

import argparse
import multiprocessing
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import moonport_proc  # noqa: E402
from http_client import get_request, parse_response  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HEAD = b"GET /hello HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200


def start(binary):
    return moonport_proc.start(
        ["taskset", "-c", "0", binary, "--listen", "127.0.0.1:0", "--header-timeout", "3600",
         "--max-connections", "100000", os.path.join(ROOT, "scripts", "hello.lua")])


def crowd(port, n, trickle, ready, stop):
    """Opens n connections, then sends each one more byte of HEAD (then
    "a" for ever) every `trickle` seconds, spread evenly, until `stop`."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        socks.append([s, 0])
    ready.set()
    t0 = time.monotonic()
    tick = 0
    while not stop.is_set():
        # Connection i sends at t0 + (i / n + k) * trickle for k = 0, 1, ...
        due = t0 + tick * trickle / n
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        entry = socks[tick % n]
        i = entry[1]
        byte = HEAD[i:i + 1] or b"a"
        try:
            entry[0].send(byte)
            entry[1] = i + 1
        except OSError:
            pass
        tick += 1
    for s, _ in socks:
        s.close()


def measure(port, seconds):
    """Latencies in ms of GET /hello, one at a time on one connection."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    req = get_request("/hello", port)
    samples = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        sock.sendall(req)
        buf = b""
        while True:
            got = parse_response(buf)
            if got:
                break
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError("server closed the normal client's connection")
            buf += chunk
        if got[0].status != 200:
            raise RuntimeError(f"normal client got {got[0].status}")
        samples.append((time.perf_counter() - t) * 1000)
    sock.close()
    return samples


def pct(samples, p):
    s = sorted(samples)
    return s[max(0, min(len(s) - 1, int(round(p * len(s))) - 1))]


def line(name, samples):
    return (f"| {name} | {len(samples):,} | {statistics.median(samples):.3f} | "
            f"{pct(samples, 0.99):.3f} | {max(samples):.3f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--connections", type=int, default=500)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--trickle", type=float, default=0.5)
    args = ap.parse_args()

    proc, port = start(args.binary)
    try:
        measure(port, 1)  # warm-up: traces compiled, pools filled
        quiet = measure(port, args.seconds)
        ready, stop = multiprocessing.Event(), multiprocessing.Event()
        helper = multiprocessing.Process(
            target=crowd, args=(port, args.connections, args.trickle, ready, stop))
        helper.start()
        if not ready.wait(60):
            sys.exit("the crowd did not connect")
        time.sleep(args.trickle)  # every slow connection has sent a byte
        loaded = measure(port, args.seconds)
        stop.set()
        helper.join(10)
        alive = proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(10)
    if not alive:
        sys.exit("moonport exited during the measurement")

    print(f"A normal client's GET /hello, one request at a time on one keep-alive "
          f"connection, {args.seconds:g} s alone and {args.seconds:g} s beside "
          f"{args.connections} connections trickling a request head that never ends "
          f"(one byte each every {args.trickle:g} s; `--header-timeout 3600`, so none is "
          f"cut off meanwhile). Latency in ms.")
    print()
    print("| phase | requests | p50 | p99 | max |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(line("alone", quiet))
    print(line(f"beside {args.connections} slow connections", loaded))


if __name__ == "__main__":
    main()
