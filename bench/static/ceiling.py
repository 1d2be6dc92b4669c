#!/usr/bin/env python3
"""The machine's loopback ceiling for bench/static/run: the least a server
can do to send a file, a blocking os.sendfile loop over one connection at a
time, no HTTP beyond a fixed head.

    ceiling.py PORT FILE

Answers every request on a connection with the whole FILE."""

import os
import socket
import sys


def main():
    port, path = int(sys.argv[1]), sys.argv[2]
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(8)
    print("listening", flush=True)
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size
    while True:
        conn, _ = srv.accept()
        while True:
            data = conn.recv(65536)
            if not data:
                break
            for _ in range(data.count(b"\r\n\r\n")):
                conn.sendall(head)
                off = 0
                while off < size:
                    off += os.sendfile(conn.fileno(), fd, off, size - off)
        conn.close()


if __name__ == "__main__":
    main()
