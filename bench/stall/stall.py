#!/usr/bin/env python3
"""An unrelated request's latency while handlers wait on a stalled
upstream, and how closely socket read timeouts keep time (run by
bench/stall/run).

One client asks GET /hello over one keep-alive connection, one request at
a time, for a number of seconds: first alone, then while N other requests
each hold a handler waiting on an upstream that never answers (a second
moonport whose handler sleeps). Then M requests each read from that
upstream with a read timeout of T ms, one after another, and report how
long the receive took, measured in the handler. The server is pinned to
CPU 0, the upstream and this script to CPU 1. Prints a Markdown section.

The integration specs hold wide bounds (a timeout fires no earlier than
set and within a second after; an unrelated request answers within a
second); the tight figures are these.
"""

import argparse
import os
import socket
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import moonport_proc  # noqa: E402
from http_client import get_request, parse_response  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "slowloris"))
from slowloris import line, measure  # noqa: E402


def start(binary, cpu, app):
    return moonport_proc.start(
        ["taskset", "-c", cpu, binary, "--listen", "127.0.0.1:0",
         "--max-connections", "100000", os.path.join(HERE, app)])


def request(port, target):
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(get_request(target, port))
    buf = b""
    while True:
        got = parse_response(buf)
        if got:
            sock.close()
            return got[0].body.decode()
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("closed before a response to " + target)
        buf += chunk


def hold(port, upstream, n):
    """n connections whose handlers wait on the stalled upstream."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(get_request(f"/hold?port={upstream}", port))
        socks.append(s)
    for s in socks:
        buf = b""
        while b"waiting\n" not in buf:
            chunk = s.recv(4096)
            if not chunk:
                raise RuntimeError("a held request ended")
            buf += chunk
    return socks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--held", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--timeouts", type=int, default=50)
    ap.add_argument("--timeout-ms", type=float, default=100)
    args = ap.parse_args()

    up, up_port = start(args.binary, "1", "upstream.lua")
    proc, port = start(args.binary, "0", "app.lua")
    try:
        measure(port, 1)  # warm-up
        quiet = measure(port, args.seconds)
        held = hold(port, up_port, args.held)
        loaded = measure(port, args.seconds)
        for s in held:
            s.close()
        late = []
        for _ in range(args.timeouts):
            err, took = request(port, f"/timeout?port={up_port}&ms={args.timeout_ms:g}").split()
            if err != "timeout":
                raise RuntimeError("expected a timeout, got " + err)
            late.append(float(took) - args.timeout_ms)
        alive = proc.poll() is None
    finally:
        proc.terminate()
        up.terminate()
        proc.wait(10)
        up.wait(10)
    if not alive:
        sys.exit("moonport exited during the measurement")

    print(f"A normal client's GET /hello, one request at a time on one keep-alive "
          f"connection, {args.seconds:g} s alone and {args.seconds:g} s while "
          f"{args.held} other requests' handlers wait on an upstream that never "
          f"answers. Latency in ms.")
    print()
    print("| phase | requests | p50 | p99 | max |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(line("alone", quiet))
    print(line(f"beside {args.held} handlers waiting on a stalled upstream", loaded))
    print()
    print(f"Read timeouts of {args.timeout_ms:g} ms on that upstream, {args.timeouts} in a "
          f"row: how much later than set the receive returned, in ms (measured in the "
          f"handler): min {min(late):.3f}, median {statistics.median(late):.3f}, "
          f"max {max(late):.3f}. None returned early: {min(late) >= 0}.")


if __name__ == "__main__":
    main()
