"""Composition: settings + server specs -> upstreams, call log, router, front."""

from __future__ import annotations

import logging
import sys
from typing import Any

import anyio

from gateway.config import ServerSpec
from gateway.front import build_http_app, build_server, serve_http, serve_stdio
from gateway.live import LiveUpstream
from gateway.router import Router
from gateway.settings import Settings
from recorder.calllog import CallLog
from recorder.paths import cassette_path
from recorder.store import CassetteStore

logger = logging.getLogger("mcpgw")


class Gateway:
    def __init__(self, specs: list[ServerSpec], settings: Settings, default_run: str = "default") -> None:
        self.settings = settings
        self.default_run = default_run
        self.store: CassetteStore | None = None
        if settings.cassette:
            self.store = CassetteStore(cassette_path(settings.cassettes_dir, settings.cassette))
        call_log = CallLog(self.store) if self.store else None
        upstreams: dict[str, Any] = {}
        self.router = Router(specs, upstreams, settings, call_log)
        for spec in specs:
            upstreams[spec.id] = LiveUpstream(
                spec, settings, on_notification=self.router.on_notification, on_catalog_changed=self.router.on_catalog_changed
            )
        self.server = build_server(self.router, default_run)

    async def serve_http(self) -> None:
        app = build_http_app(self.router, self.server, self.settings.host, self.settings.path)
        url = f"http://{self.settings.host}:{self.settings.port}{self.settings.path}"
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(serve_http, app, self.settings.host, self.settings.port, lambda: None)
                print(f"mcpgw: serving MCP at {url} (status: http://{self.settings.host}:{self.settings.port}/status)", file=sys.stderr)
                await anyio.sleep(0.2)
                await self.router.wait_ready(self.settings.start_timeout)
                self.announce()
        finally:
            self.close()

    async def serve_stdio(self) -> None:
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(serve_stdio, self.router, self.server)
                await anyio.sleep(0.2)
                await self.router.wait_ready(self.settings.start_timeout)
                self.announce()
        finally:
            self.close()

    def announce(self) -> None:
        status = self.router.status()
        lines = [f"mcpgw: {status['tools']} tools from {len(status['servers'])} server(s); validate={self.settings.validate}; call log -> {status['cassette']}"]
        for name, info in sorted(status["servers"].items()):
            reason = f" ({info['reason']})" if info.get("reason") else ""
            lines.append(f"  {name:<24} {info['state']:<12} {info['exposed_tools']:>3} tools{reason}")
        print("\n".join(lines), file=sys.stderr)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
