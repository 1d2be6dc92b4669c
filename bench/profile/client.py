"""Sends exactly N keep-alive requests over C connections, one in flight per
connection, and reads every response (Content-Length or chunked).

usage: client.py PORT PATH N C
"""
import socket, sys
port, path, n, c = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
req = ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path).encode()
socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(c)]
def read_one(s, buf):
    while True:
        i = buf.find(b"\r\n\r\n")
        if i >= 0:
            head = buf[:i].decode()
            cl = 0; chunked = False
            for line in head.split("\r\n")[1:]:
                k, v = line.split(":", 1)
                if k.lower() == "content-length": cl = int(v)
                if k.lower() == "transfer-encoding": chunked = True
            if chunked:
                j = buf.find(b"\r\n0\r\n\r\n", i + 4)
                if j >= 0: return buf[j + 7:]
            elif len(buf) >= i + 4 + cl:
                return buf[i + 4 + cl:]
        buf += s.recv(65536)
bufs = [b""] * c
for k in range(n // c):
    for s in socks: s.sendall(req)
    for j, s in enumerate(socks): bufs[j] = read_one(s, bufs[j])
for s in socks: s.close()
