#!/usr/bin/env python3
"""Fetches one URL path again and again over one kept-alive connection and
says how fast the bodies came, for bench/static/run.

    fetch.py PORT PATH COUNT

Prints one line per fetch: "BYTES SECONDS" (the body's bytes, and the time
from sending the request to its last byte). Each body is read into one
reused 4 MiB buffer and dropped; a body of the wrong length stops the run."""

import socket
import sys
import time


def read_head(sock, buf):
    """Reads up to the end of the head; returns (content_length, extra)."""
    data = b""
    while b"\r\n\r\n" not in data:
        n = sock.recv_into(buf)
        if n == 0:
            sys.exit("fetch.py: connection closed in the head")
        data += bytes(buf[:n])
    head, rest = data.split(b"\r\n\r\n", 1)
    status = head.split(b"\r\n", 1)[0]
    if b" 200 " not in status:
        sys.exit("fetch.py: " + status.decode("latin-1"))
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value), len(rest)
    sys.exit("fetch.py: no Content-Length")


def main():
    port, path, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    buf = bytearray(4 << 20)
    view = memoryview(buf)
    request = ("GET %s HTTP/1.1\r\nHost: bench\r\n\r\n" % path).encode()
    for _ in range(count):
        t0 = time.perf_counter()
        sock.sendall(request)
        length, got = read_head(sock, view)
        while got < length:
            n = sock.recv_into(view, min(len(buf), length - got))
            if n == 0:
                sys.exit("fetch.py: connection closed after %d of %d bytes" % (got, length))
            got += n
        print(length, time.perf_counter() - t0, flush=True)
    sock.close()


if __name__ == "__main__":
    main()
