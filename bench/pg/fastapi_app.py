"""The FastAPI peer of bench/pg/run: TechEmpower's single query and multiple
queries tests on FastAPI and asyncpg, served by uvicorn, one process.

    DATABASE_URL=postgres://... /usr/bin/python3 -m uvicorn --app-dir bench/pg \\
        fastapi_app:app --host 127.0.0.1 --port PORT --log-level warning --no-access-log

GET /db                -> {"id":N,"randomNumber":M}
GET /queries?queries=Q -> [{"id":N,"randomNumber":M}, ...], Q clamped to
                          1..500 (1 when it is not an integer), the Q queries
                          run one after another on one pooled connection

The pool is sized as TechEmpower's FastAPI entry sizes it for one process on
one CPU: at most min(1800 / CPUs, 160) = 160 connections, half of them opened
at start-up. Answers are written with the standard library's json
(JSONResponse), without FastAPI's response-model encoding.
"""

import os
from typing import Optional
import random

import asyncpg
from fastapi import FastAPI
from fastapi.responses import JSONResponse

SQL = "SELECT id, randomnumber FROM world WHERE id = $1"
POOL_MAX = 160
POOL_MIN = POOL_MAX // 2

app = FastAPI()


@app.on_event("startup")
async def open_pool():
    app.state.pool = await asyncpg.create_pool(
        os.environ["DATABASE_URL"], min_size=POOL_MIN, max_size=POOL_MAX)


@app.on_event("shutdown")
async def close_pool():
    await app.state.pool.close()


def count(raw):
    try:
        n = int(raw)
    except (TypeError, ValueError):
        return 1
    return min(max(n, 1), 500)


@app.get("/db")
async def single_query():
    async with app.state.pool.acquire() as conn:
        row = await conn.fetchrow(SQL, random.randint(1, 10000))
    return JSONResponse({"id": row["id"], "randomNumber": row["randomnumber"]})


@app.get("/queries")
async def multiple_queries(queries: Optional[str] = None):
    n = count(queries)
    worlds = []
    async with app.state.pool.acquire() as conn:
        statement = await conn.prepare(SQL)
        for _ in range(n):
            row = await statement.fetchrow(random.randint(1, 10000))
            worlds.append({"id": row["id"], "randomNumber": row["randomnumber"]})
    return JSONResponse(worlds)
