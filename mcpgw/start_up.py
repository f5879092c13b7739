"""Two pieces of a gateway's start: the wait for its servers, said aloud, and a stdio gateway's model listener."""

from __future__ import annotations

import sys
from typing import Any

import anyio

from mcpgw.gateway.endpoints.http_app import build_model_app
from mcpgw.gateway.mcp_server import serve_http


async def settle_saying_who(router: Any, ready_timeout: float, every: float = 5.0) -> None:
    """Wait for every server's first start to settle, saying every few seconds which are still starting."""
    began = anyio.current_time()
    while True:
        with anyio.move_on_after(every):
            await router.until_settled()
            return
        waiting = sorted(name for name, upstream in router.upstreams.items() if upstream.status.state == "starting")
        if waiting:
            print(
                f"mcpgw: waiting for {len(waiting)} of {len(router.upstreams)} server(s) to start after "
                f"{anyio.current_time() - began:.0f}s: {', '.join(waiting)} (lists wait for them, at most "
                f"--ready-timeout {ready_timeout:g}s)",
                file=sys.stderr,
                flush=True,
            )


async def model_listener(routes: list[Any], guard: Any, settings: Any, tg: Any, stop: anyio.Event) -> None:
    """The model routes `serve_http` serves beside /mcp (the gateway's passthrough: its cassette, lanes and call
    log), alone behind the same guard, for a stdio harness whose model must be recorded with its tools
    (`serve --stdio --port N`); it stops when `stop` is set (the end of input)."""
    listening, bound = anyio.Event(), []

    def ready(port: int) -> None:
        bound.append(port)
        listening.set()

    tg.start_soon(serve_http, build_model_app(routes, guard), settings.host, settings.port, ready, None, None, stop)
    await listening.wait()
    base = f"http://{settings.host}:{bound[0]}"
    print(
        f"mcpgw: serving MCP over stdio, and the model at {base}/v1 (OpenAI-compatible; Azure: {base}/openai/...)",
        file=sys.stderr,
    )
