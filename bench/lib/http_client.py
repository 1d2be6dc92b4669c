"""A minimal HTTP/1.1 client for the benchmark helpers: building GET
requests and parsing responses out of a byte buffer (Content-Length or
chunked bodies). Only what the helpers need; not a general client."""

import os
import socket


def get_request(path, port):
    """The bytes of a keep-alive GET for `path` on 127.0.0.1:`port`."""
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lower-case name -> value
        self.body = body


def parse_response(buf):
    """Parse one response at the start of `buf`.

    Returns (Response, bytes consumed), or None while the response is still
    incomplete. Raises ValueError on a response it cannot frame."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = buf[:end].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ValueError(f"bad status line: {lines[0]!r}")
    status = int(parts[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    pos = end + 4
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return None
            size = int(buf[pos:eol].split(b";")[0], 16)
            if size == 0:
                # The last chunk, then trailers (usually none), then CRLF.
                trailer_end = buf.find(b"\r\n\r\n", eol)
                if trailer_end < 0:
                    return None
                return Response(status, headers, bytes(body)), trailer_end + 4
            if len(buf) < eol + 2 + size + 2:
                return None
            body += buf[eol + 2:eol + 2 + size]
            pos = eol + 2 + size + 2
    if "content-length" in headers:
        length = int(headers["content-length"])
        if len(buf) < pos + length:
            return None
        return Response(status, headers, bytes(buf[pos:pos + length])), pos + length
    if status in (204, 304) or 100 <= status < 200:
        return Response(status, headers, b""), pos
    raise ValueError("response without Content-Length or chunked framing")


def exchange(sock, payload, count, timeout):
    """Send `payload` on a blocking socket and read `count` responses."""
    sock.settimeout(timeout)
    sock.sendall(payload)
    buf = b""
    out = []
    while len(out) < count:
        parsed = parse_response(buf)
        if parsed is None:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError(
                    f"connection closed after {len(out)} of {count} responses")
            buf += chunk
            continue
        response, used = parsed
        out.append(response)
        buf = buf[used:]
    return out


def connect(port, timeout):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


def tree_rss_kb(pid):
    """VmRSS in KiB of process `pid` and all its descendants, summed."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields after
        # the last ')' are fixed.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, []))
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total
