"""A real HTTP server on loopback (aiohttp) serving model archives the tests build, with
HTTP Range support and switchable faults: cut the body short, fail with 500."""

from __future__ import annotations

import asyncio
import threading

from aiohttp import web


class ModelServer:
    """Serves `files` (name -> bytes) at /NAME. `cut_after[name] = n` makes the next
    request for NAME send n body bytes and drop the connection; `fail[name] = True` answers
    500 until reset. `ranges` records each request's Range header."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.cut_after: dict[str, int] = {}
        self.fail: dict[str, bool] = {}
        self.ranges: list[str | None] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.port = 0

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        self.ranges.append(request.headers.get("Range"))
        if self.fail.get(name):
            return web.Response(status=500, text="broken")
        if name not in self.files:
            return web.Response(status=404)
        data = self.files[name]
        start = 0
        status = 200
        if "Range" in request.headers:
            start = int(request.headers["Range"].removeprefix("bytes=").split("-")[0])
            if start >= len(data):
                return web.Response(status=416)
            status = 206
        body = data[start:]
        response = web.StreamResponse(status=status)
        response.content_length = len(body)
        if status == 206:
            response.headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        await response.prepare(request)
        cut = self.cut_after.pop(name, None)
        if cut is not None:
            await response.write(body[:cut])
            await asyncio.sleep(0.05)
            request.transport.close()  # the connection drops mid-body
            return response
        await response.write(body)
        await response.write_eof()
        return response

    def start(self) -> ModelServer:
        self.thread.start()
        app = web.Application()
        app.router.add_get("/{name}", self._handle)
        self.runner = web.AppRunner(app)

        async def setup() -> int:
            await self.runner.setup()
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            await site.start()
            return site._server.sockets[0].getsockname()[1]

        self.port = asyncio.run_coroutine_threadsafe(setup(), self.loop).result(10)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
