"""The FastAPI peer: the benchmark routes as a FastAPI app, served by uvicorn.

    /usr/bin/python3 -m uvicorn --app-dir bench/peers fastapi_app:app \
        --host 127.0.0.1 --port PORT --log-level warning --no-access-log

GET /hello      -> "Hello, World!" (text/plain)
GET /users/{id} -> {"id":42,"name":"user-42"} (application/json); FastAPI
                   answers 422 when the id is not an integer.
"""

from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

app = FastAPI()


@app.get("/hello", response_class=PlainTextResponse)
async def hello():
    return "Hello, World!"


@app.get("/users/{user_id}")
async def user(user_id: int):
    return {"id": user_id, "name": f"user-{user_id}"}
