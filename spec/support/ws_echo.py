#!/usr/bin/env python3
"""A WebSocket echo server for the specs (Debian's python3-websockets, a
real implementation of RFC 6455): every text or binary message comes back
as it came; a message "close" makes the server close with status 1000.

usage: ws_echo.py PORT
"""

import asyncio
import sys

import websockets


async def echo(ws, path=None):
    async for message in ws:
        if message == "close":
            await ws.close(1000, "bye")
            return
        await ws.send(message)


async def main(port):
    async with websockets.serve(echo, "127.0.0.1", port, max_size=1 << 24):
        await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
