#!/usr/bin/python3
"""A server that answers every connection with fixed bytes, for the specs
of moonport.http's response parsing: responses no real server sends
(obs-fold, a bare CR, conflicting lengths) and connections cut mid-body.

    raw_http.py PORT

Each connection's request path picks the answer: /NAME sends ANSWERS[NAME]
and then closes the connection, except /keep-then-drop, which answers a
keep-alive response and then closes the connection when the next request
on it arrives, without answering it: a server that timed the connection
out just as the client reused it; and /reset-body, which sends part of a
body and then resets the connection (RST, not FIN).
"""

import gzip
import socket
import struct
import sys
import threading

ANSWERS = {
    "ok": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "obs-fold": b"HTTP/1.1 200 OK\r\nX-A: 1\r\n  folded\r\nContent-Length: 2\r\n\r\nok",
    "bare-cr": b"HTTP/1.1 200 OK\r\nX-A: 1\rX-B: 2\r\nContent-Length: 2\r\n\r\nok",
    "two-lengths": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!",
    "cut-body": b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part of it",
    "cut-chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
    "to-close": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nread until the close",
    "continue": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal",
    "bad-gzip": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 9\r\n\r\nnot gzip!",
}
# 10,000 bytes of text in a gzip body of a few dozen.
_GZ = gzip.compress(b"hello gzip " * 1000 + b"end")
ANSWERS["gzip"] = (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: "
                   + str(len(_GZ)).encode() + b"\r\n\r\n" + _GZ)


KEPT = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nkept"


def read_head(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(4096)
        if not more:
            return None
        data += more
    return data


def serve(conn):
    with conn:
        data = read_head(conn)
        if data is None:
            return
        path = data.split(b" ", 2)[1].decode().strip("/")
        if path == "keep-then-drop":
            conn.sendall(KEPT)
            read_head(conn)
            return
        if path == "reset-body":
            conn.sendall(ANSWERS["cut-body"])
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        conn.sendall(ANSWERS.get(path, ANSWERS["ok"]))


def main():
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", int(sys.argv[1])))
    srv.listen(64)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
