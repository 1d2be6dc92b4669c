#!/usr/bin/python3
"""Check a server's answers before it is measured.

  check.py PORT ROUTE...      ROUTE: hello or users

For each route: one GET must answer 200 with the expected Content-Type and
body, and a batch of 16 pipelined GETs sent in one write must get 16 such
answers in order. Prints one line per route; exits 1 naming what was wrong."""

import json
import sys

from http_client import connect, exchange, get_request

PIPELINE = 16

ROUTES = {
    "hello": ("/hello", "text/plain",
              lambda body: body == b"Hello, World!", '"Hello, World!"'),
    "users": ("/users/42", "application/json",
              lambda body: json.loads(body) == {"id": 42, "name": "user-42"},
              '{"id":42,"name":"user-42"}'),
}


def check_one(response, ctype, body_ok, want):
    if response.status != 200:
        return f"status {response.status}, want 200 (body {response.body[:200]!r})"
    got_type = response.headers.get("content-type", "")
    if not got_type.startswith(ctype):
        return f"Content-Type {got_type!r}, want {ctype}"
    try:
        ok = body_ok(response.body)
    except ValueError:
        ok = False
    if not ok:
        return f"body {response.body[:200]!r}, want {want}"
    return None


def check_route(port, route):
    path, ctype, body_ok, want = ROUTES[route]
    with connect(port, timeout=5) as sock:
        single = exchange(sock, get_request(path, port), 1, timeout=5)
        error = check_one(single[0], ctype, body_ok, want)
        if error:
            return f"GET {path}: {error}"
        batch = exchange(sock, get_request(path, port) * PIPELINE, PIPELINE, timeout=5)
        for i, response in enumerate(batch):
            error = check_one(response, ctype, body_ok, want)
            if error:
                return f"pipelined GET {path} #{i + 1}: {error}"
    return None


def main():
    if len(sys.argv) < 3 or any(r not in ROUTES for r in sys.argv[2:]):
        sys.exit("usage: check.py PORT hello|users...")
    port = int(sys.argv[1])
    failed = False
    for route in sys.argv[2:]:
        try:
            error = check_route(port, route)
        except (OSError, ValueError) as e:
            error = f"{type(e).__name__}: {e}"
        if error:
            print(f"  {route}: WRONG: {error}")
            failed = True
        else:
            print(f"  {route}: ok (200, body as expected, {PIPELINE} pipelined)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
