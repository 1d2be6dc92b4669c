#!/usr/bin/python3
"""Memory of a server holding idle keep-alive connections.

  idle_conns.py PORT PATH --pid PID --count N

1. A few requests on one connection (so lazily built state exists), then
   that connection closes; the server's VmRSS (summed over PID and its
   children) is the idle figure.
2. N connections open, in batches; each sends one GET PATH, reads its 200,
   and stays open, idle. VmRSS again.
3. All close; VmRSS once more.

Prints one line: "idle_kb=.. open_kb=.. closed_kb=.. count=N still_open=M"
where still_open counts the connections the server had not closed when the
second figure was taken."""

import argparse
import resource
import selectors
import socket
import sys
import time

from http_client import connect, exchange, get_request, parse_response, tree_rss_kb

WARM_REQUESTS = 100
BATCH = 250
BATCH_TIMEOUT_S = 30
SETTLE_S = 1.0


def raise_nofile(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            sys.exit(f"idle_conns: need {need} file descriptors, hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def open_batch(port, path, n):
    """Open n connections; each gets one 200 answer. Returns the sockets."""
    request = get_request(path, port)
    sel = selectors.DefaultSelector()
    state = {}
    for _ in range(n):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        state[sock] = b""
        sel.register(sock, selectors.EVENT_WRITE)
    pending = n
    deadline = time.monotonic() + BATCH_TIMEOUT_S
    while pending:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{pending} of {n} connections got no answer "
                               f"within {BATCH_TIMEOUT_S} s")
        for key, events in sel.select(timeout=1):
            sock = key.fileobj
            if events & selectors.EVENT_WRITE:
                err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    raise RuntimeError(f"connect failed: {socket.errno.errorcode.get(err, err)}")
                sock.send(request)  # a few dozen bytes: one send suffices
                sel.modify(sock, selectors.EVENT_READ)
                continue
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError("server closed a connection before answering")
            state[sock] += chunk
            parsed = parse_response(state[sock])
            if parsed is None:
                continue
            if parsed[0].status != 200:
                raise RuntimeError(f"status {parsed[0].status} on {path}")
            sel.unregister(sock)
            pending -= 1
    sel.close()
    return list(state)


def count_open(socks):
    """Connections with nothing to read: the server has not closed them."""
    sel = selectors.DefaultSelector()
    for sock in socks:
        sel.register(sock, selectors.EVENT_READ)
    readable = len(sel.select(timeout=0))
    sel.close()
    return len(socks) - readable


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("path")
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--count", type=int, default=10000)
    args = parser.parse_args()
    raise_nofile(args.count + 100)

    with connect(args.port, timeout=5) as sock:
        for _ in range(WARM_REQUESTS):
            exchange(sock, get_request(args.path, args.port), 1, timeout=5)
    time.sleep(SETTLE_S)
    idle = tree_rss_kb(args.pid)

    socks = []
    try:
        while len(socks) < args.count:
            socks += open_batch(args.port, args.path, min(BATCH, args.count - len(socks)))
        time.sleep(SETTLE_S)
        opened = tree_rss_kb(args.pid)
        still_open = count_open(socks)
    except RuntimeError as e:
        sys.exit(f"idle_conns: {e} (after {len(socks)} connections)")
    finally:
        for sock in socks:
            sock.close()
    time.sleep(SETTLE_S)
    closed = tree_rss_kb(args.pid)
    print(f"idle_kb={idle} open_kb={opened} closed_kb={closed} "
          f"count={args.count} still_open={still_open}")


if __name__ == "__main__":
    main()
