"""The FastAPI peer of bench/tfb: the TechEmpower Framework Benchmarks' (TFB)
six test types on FastAPI and asyncpg, served by uvicorn, one process, as
TFB's FastAPI entry (frameworks/Python/fastapi/app.py) writes them. All from
Debian: python3-fastapi, python3-uvicorn, python3-asyncpg, python3-jinja2.

    DATABASE_URL=postgres://... /usr/bin/python3 -m uvicorn --app-dir bench/tfb \\
        fastapi_app:app --host 127.0.0.1 --port PORT --log-level warning --no-access-log

GET /json              {"message":"Hello, World!"}, a new object each time
GET /db                one random world row {"id":N,"randomNumber":M}
GET /queries?queries=Q Q random rows, one query each, run one after another
                       on one pooled connection with a statement prepared
                       for the request; Q an integer clamped to 1..500,
                       anything else 1
GET /fortunes          the fortune table plus one fortune added here, sorted
                       by message, through a Jinja2 template with HTML
                       escaping (TFB's entry renders its template the same
                       way, through FastAPI's Jinja2Templates, from a file)
GET /updates?queries=Q Q distinct random rows (ids sorted, so that requests
                       updating at once lock rows in the same order) read as
                       in /queries, each given a new random number, written
                       back with executemany of one UPDATE per row, which
                       asyncpg sends as one pipeline in a transaction (TFB's
                       entry)
GET /plaintext         Hello, World!

uvicorn adds the Server (uvicorn) and Date headers; Starlette's responses
carry Content-Type and Content-Length.

The pool is sized as TFB's FastAPI entry sized it for one process on one
CPU: at most min(1800 / CPUs, 160) = 160 connections, half of them opened
at start-up (its last version allows 1000 / CPUs). JSON answers are written with the standard library's json
(JSONResponse; TFB's entry uses orjson or ujson, not in Debian's FastAPI).
"""

import os
from random import randint, sample
from typing import Optional

import asyncpg
import jinja2
from fastapi import FastAPI
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse

READ_ROW_SQL = "SELECT id, randomnumber FROM world WHERE id = $1"
WRITE_ROW_SQL = "UPDATE world SET randomnumber = $1 WHERE id = $2"
FORTUNES_SQL = "SELECT id, message FROM fortune"
POOL_MAX = 160
POOL_MIN = POOL_MAX // 2

FORTUNES_TEMPLATE = jinja2.Environment(autoescape=True).from_string(
    "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>"
    "<tr><th>id</th><th>message</th></tr>"
    "{% for fortune in fortunes %}"
    "<tr><td>{{ fortune.id }}</td><td>{{ fortune.message }}</td></tr>"
    "{% endfor %}"
    "</table></body></html>")

app = FastAPI()


@app.on_event("startup")
async def open_pool():
    app.state.pool = await asyncpg.create_pool(
        os.environ["DATABASE_URL"], min_size=POOL_MIN, max_size=POOL_MAX)


@app.on_event("shutdown")
async def close_pool():
    await app.state.pool.close()


def count(raw):
    """TFB's queries parameter: an integer clamped to 1..500, else 1."""
    try:
        n = int(raw)
    except (TypeError, ValueError):
        return 1
    return min(max(n, 1), 500)


@app.get("/json")
async def json_serialization():
    return JSONResponse({"message": "Hello, World!"})


@app.get("/plaintext")
async def plaintext():
    return PlainTextResponse(b"Hello, World!")


@app.get("/db")
async def single_query():
    async with app.state.pool.acquire() as conn:
        row = await conn.fetchrow(READ_ROW_SQL, randint(1, 10000))
    return JSONResponse({"id": row["id"], "randomNumber": row["randomnumber"]})


@app.get("/queries")
async def multiple_queries(queries: Optional[str] = None):
    n = count(queries)
    worlds = []
    async with app.state.pool.acquire() as conn:
        statement = await conn.prepare(READ_ROW_SQL)
        for _ in range(n):
            row = await statement.fetchrow(randint(1, 10000))
            worlds.append({"id": row["id"], "randomNumber": row["randomnumber"]})
    return JSONResponse(worlds)


def by_message(fortune):
    return fortune["message"]


@app.get("/fortunes")
async def fortunes():
    async with app.state.pool.acquire() as conn:
        rows = await conn.fetch(FORTUNES_SQL)
    rows.append({"id": 0, "message": "Additional fortune added at request time."})
    rows.sort(key=by_message)
    return HTMLResponse(FORTUNES_TEMPLATE.render(fortunes=rows))


@app.get("/updates")
async def updates(queries: Optional[str] = None):
    n = count(queries)
    worlds = []
    async with app.state.pool.acquire() as conn:
        statement = await conn.prepare(READ_ROW_SQL)
        for row_id in sorted(sample(range(1, 10001), n)):
            row = await statement.fetchrow(row_id)
            worlds.append({"id": row["id"], "randomNumber": row["randomnumber"]})
        for world in worlds:
            world["randomNumber"] = randint(1, 10000)
        await conn.executemany(
            WRITE_ROW_SQL, [(w["randomNumber"], w["id"]) for w in worlds])
    return JSONResponse(worlds)
