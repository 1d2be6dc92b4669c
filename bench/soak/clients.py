"""The soak's mixed clients (bench/soak/soak.py runs them beside wrk).

One asyncio loop, in a thread of its own, runs a few connections of each
kind until the deadline:

- slow: a request sent a few bytes at a time (head, and now and then an
  upload's body), then read normally; keep-alive;
- pipeline: 8 requests in one write, the 8 answers read and checked in
  order;
- upload: POST /add (JSON), and POST /upload with a body of up to 512 KiB
  sent with Content-Length or chunked, the app answering the byte count
  and sum;
- drop: connections dropped on purpose: mid-head, mid-body, mid-response
  (a 4 MB GET /blob read for 64 KiB), and right after the request (with a
  reset); none is a request that counts;
- upstream: GET /upstream (the app's call to a second moonport through
  moonport.http);
- redis: GET /redis (the app's INCR over moonport.socket).

Every answer is checked (status and body). Answers are counted per kind
in 10 s buckets; each request that did not get its right answer is
recorded with the connection's local port, when it was opened, whether
it had been answered before, and the error, so that soak.py can tell the
requests a killed worker took with it from the rest.
"""

import asyncio
import json
import random
import socket
import time

from http_client import parse_response

BUCKET_S = 10


class Failure(Exception):
    """A request that did not get its right answer."""

    def __init__(self, what, status=None, body=b""):
        super().__init__(what)
        self.status = status
        self.body = body


class Conn:
    """One client connection: its stream, local port, and what it saw."""

    def __init__(self, port):
        self.port = port
        self.reader = self.writer = None
        self.local_port = None
        self.opened_at = None
        self.answered = False
        self.buf = b""

    async def open(self):
        self.reader, self.writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", self.port), 5)
        sock = self.writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.local_port = sock.getsockname()[1]
        self.opened_at = time.time()
        self.answered = False
        self.buf = b""

    def close(self, reset=False):
        if self.writer is None:
            return
        if reset:
            sock = self.writer.get_extra_info("socket")
            # SO_LINGER with a zero timeout: close sends RST, not FIN.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        self.writer.transport.abort() if reset else self.writer.close()
        self.writer = self.reader = None

    async def send(self, data):
        self.writer.write(data)
        await self.writer.drain()

    async def response(self, timeout=10):
        """The next response (http_client.Response), or Failure."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                parsed = parse_response(self.buf)
            except ValueError as e:
                raise Failure(f"bad response: {e}")
            if parsed:
                resp, used = parsed
                self.buf = self.buf[used:]
                self.answered = True
                return resp
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failure("timeout")
            try:
                chunk = await asyncio.wait_for(self.reader.read(65536), left)
            except asyncio.TimeoutError:
                raise Failure("timeout")
            if not chunk:
                raise Failure("closed" if not self.buf else "closed mid-response")
            self.buf += chunk


def request(method, path, body=None, headers=()):
    head = [f"{method} {path} HTTP/1.1", "Host: soak"]
    head += list(headers)
    if body is not None:
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + (body or b"")


def expect(resp, status, body=None):
    if resp.status != status or (body is not None and resp.body != body):
        raise Failure(f"got {resp.status} {resp.body[:80]!r}", resp.status, resp.body)


def expect_json(resp, status, value):
    """The answer's status, and its body decoded as JSON (moonport.json
    writes an object's keys in its own order)."""
    try:
        ok = resp.status == status and json.loads(resp.body) == value
    except ValueError:
        ok = False
    if not ok:
        raise Failure(f"got {resp.status} {resp.body[:80]!r}", resp.status, resp.body)


def user_check(n):
    return (request("GET", f"/users/{n}"),
            lambda r: expect_json(r, 200, {"id": n, "name": f"user-{n}"}))


def mixed_request(i):
    """One of the reference API's requests and the check of its answer."""
    k = i % 4
    if k == 0:
        return user_check(i % 1000)
    if k == 1:
        return request("GET", "/health"), lambda r: expect_json(r, 200, {"ok": True})
    if k == 2:
        q = f"p{i}"
        return (request("GET", f"/search?q={q}"),
                lambda r: expect_json(r, 200, {"q": q, "length": len(q)}))
    body = json.dumps({"a": i, "b": 1}).encode()
    return (request("POST", "/add", body, ["Content-Type: application/json"]),
            lambda r: expect_json(r, 200, {"sum": i + 1}))


def upload_answer(data):
    return f"{len(data)} {sum(data) % 65536}".encode()


def chunked(data, rng):
    out = []
    pos = 0
    while pos < len(data):
        n = min(len(data) - pos, rng.randint(1, 65536))
        out.append(b"%x\r\n" % n + data[pos:pos + n] + b"\r\n")
        pos += n
    out.append(b"0\r\n\r\n")
    return b"".join(out)


class Mix:
    """Runs the clients until `deadline` (time.time()); results in
    .counts {(bucket, kind): answers}, .failures, .dropped {kind: n}."""

    def __init__(self, port, t0, deadline, upstream_body=b"Hello, World!"):
        self.port = port
        self.t0 = t0
        self.deadline = deadline
        self.upstream_body = upstream_body
        self.counts = {}
        self.failures = []
        self.dropped = {}
        self.rng = random.Random(20)

    def count(self, kind, n=1):
        b = int((time.time() - self.t0) // BUCKET_S)
        self.counts[(b, kind)] = self.counts.get((b, kind), 0) + n

    def fail(self, kind, route, conn, err, n=1):
        self.failures.append({
            "t": time.time(), "kind": kind, "route": route, "n": n,
            "port": conn.local_port, "opened_at": conn.opened_at,
            "answered_before": conn.answered, "error": str(err),
            "status": getattr(err, "status", None),
            "body": (getattr(err, "body", b"") or b"")[:120].decode("latin-1"),
        })

    def running(self):
        return time.time() < self.deadline

    async def loop(self, kind, step, pause):
        """Runs step(conn) over one keep-alive connection, reconnecting after
        a failure, until the deadline."""
        conn = Conn(self.port)
        i = 0
        while self.running():
            i += 1
            try:
                if conn.writer is None:
                    await conn.open()
                await step(conn, i)
            except (Failure, OSError, asyncio.TimeoutError) as e:
                self.fail(kind, getattr(e, "route", "connect"), conn, e, getattr(e, "n", 1))
                conn.close()
                conn = Conn(self.port)
            await asyncio.sleep(pause)
        conn.close()

    # Each step raises with .route (and .n for a pipeline) set.

    async def slow_step(self, conn, i):
        if i % 4 == 0:
            data = self.rng.randbytes(2048)
            route, payload = "/upload", request("POST", "/upload", data)
            check = lambda r: expect(r, 200, upload_answer(data))  # noqa: E731
            piece, gap = 256, 0.02
        else:
            route = "/users"
            payload, check = user_check(i)
            piece, gap = 6, 0.04
        try:
            for k in range(0, len(payload), piece):
                await conn.send(payload[k:k + piece])
                await asyncio.sleep(gap)
            check(await conn.response())
        except (Failure, OSError) as e:
            e.route = route
            raise
        self.count("slow")

    async def pipeline_step(self, conn, i):
        pairs = [mixed_request(i * 8 + k) for k in range(8)]
        got = 0
        try:
            await conn.send(b"".join(p for p, _ in pairs))
            for _, check in pairs:
                check(await conn.response())
                got += 1
        except (Failure, OSError) as e:
            self.count("pipeline", got)
            e.route, e.n = "pipeline", 8 - got
            raise
        self.count("pipeline", 8)

    async def upload_step(self, conn, i):
        try:
            if i % 3 == 0:
                payload, check = mixed_request(4 * i + 3)  # POST /add
                route = "/add"
                await conn.send(payload)
            else:
                size = self.rng.choice([0, 1, 100, 4096, 65537, 300000, 512 * 1024])
                data = self.rng.randbytes(size)
                route = "/upload"
                if i % 3 == 1:
                    await conn.send(request("POST", "/upload", data))
                else:
                    await conn.send(request("POST", "/upload", None,
                                            ["Transfer-Encoding: chunked"]) + chunked(data, self.rng))
                check = lambda r: expect(r, 200, upload_answer(data))  # noqa: E731
            check(await conn.response())
        except (Failure, OSError) as e:
            e.route = route
            raise
        self.count("upload")

    async def route_step(self, conn, i, kind, route):
        try:
            await conn.send(request("GET", route))
            r = await conn.response()
            if kind == "upstream":
                expect(r, 200, self.upstream_body)
            elif r.status != 200 or not r.body.isdigit():
                raise Failure(f"got {r.status} {r.body[:80]!r}", r.status, r.body)
        except (Failure, OSError) as e:
            e.route = route
            raise
        self.count(kind)

    async def drops(self, pause):
        """Connections dropped on purpose, one way after another; a drop that
        could not even connect is a failure."""
        i = 0
        while self.running():
            i += 1
            conn = Conn(self.port)
            way = ("mid-head", "mid-body", "mid-response", "reset-after-request")[i % 4]
            try:
                await conn.open()
                if way == "mid-head":
                    await conn.send(b"GET /users/1 HTTP/1.1\r\nHost: so")
                    await asyncio.sleep(0.05)
                elif way == "mid-body":
                    await conn.send(request("POST", "/upload", None,
                                            ["Content-Length: 200000"]) + b"x" * 50000)
                    await asyncio.sleep(0.05)
                elif way == "mid-response":
                    await conn.send(request("GET", "/blob/4000000"))
                    got = 0
                    while got < 65536:
                        chunk = await asyncio.wait_for(conn.reader.read(65536), 10)
                        if not chunk:
                            raise Failure("closed before 64 KiB of /blob")
                        got += len(chunk)
                else:
                    await conn.send(request("GET", "/users/2"))
                conn.close(reset=(way == "reset-after-request"))
                self.dropped[way] = self.dropped.get(way, 0) + 1
            except (Failure, OSError, asyncio.TimeoutError) as e:
                self.fail("drop", way, conn, e)
                conn.close()
            await asyncio.sleep(pause)

    async def main(self):
        tasks = []
        for _ in range(3):
            tasks.append(self.loop("slow", self.slow_step, 0.05))
        for _ in range(2):
            tasks.append(self.loop("pipeline", self.pipeline_step, 0.02))
            tasks.append(self.loop("upload", self.upload_step, 0.02))
        tasks.append(self.loop("upstream", lambda c, i: self.route_step(c, i, "upstream", "/upstream"),
                               0.01))
        tasks.append(self.loop("redis", lambda c, i: self.route_step(c, i, "redis", "/redis"), 0.01))
        for _ in range(2):
            tasks.append(self.drops(0.05))
        await asyncio.gather(*tasks)

    def run(self):
        asyncio.run(self.main())
