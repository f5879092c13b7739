"""A minimal MCP client session over streamable HTTP: handshake or 2026-07-28 era, tagged by header, ?run= or not."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

import httpx

PROTO = "2025-06-18"
_ID_LOCK = threading.Lock()


class RpcError(Exception):
    def __init__(self, error: dict):
        super().__init__(json.dumps(error)[:500])
        self.error = error


@dataclass
class Session:
    """One MCP client session (handshake era) over streamable HTTP; `run`: X-Run-Id, or None (untagged)."""

    url: str
    run: str | None = None
    via_query: bool = False
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=60))
    sid: str | None = None
    next_id: int = 1
    modern: bool = False  # a 2026-07-28 client: no handshake, no session; untagged ones are known by a cookie

    def _headers(self) -> dict[str, str]:
        h = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": PROTO,
        }
        if self.modern:
            h["MCP-Protocol-Version"] = "2026-07-28"
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
        if self.run and not self.via_query:
            h["X-Run-Id"] = self.run
        return h

    def _target(self) -> str:
        if self.run and self.via_query:
            return self.url + "?run=" + self.run
        return self.url

    def _post(self, body: dict) -> dict | None:
        headers = self._headers()
        if self.modern:
            headers["Mcp-Method"] = body["method"]
            name = (body.get("params") or {}).get("name") or (body.get("params") or {}).get("uri")
            if name:
                headers["Mcp-Name"] = name
        r = self.client.post(self._target(), headers=headers, content=json.dumps(body))
        if "id" not in body:
            return None
        if r.status_code >= 400 and not r.content:
            raise RpcError({"code": -1, "message": f"HTTP {r.status_code}"})
        ctype = r.headers.get("content-type", "")
        if "text/event-stream" in ctype:
            for block in r.text.split("\n\n"):
                data = "\n".join(l[5:].lstrip() for l in block.splitlines() if l.startswith("data:"))
                if not data:
                    continue
                msg = json.loads(data)
                if msg.get("id") == body["id"] and ("result" in msg or "error" in msg):
                    return msg
            raise RpcError({"code": -2, "message": f"no answer in stream: {r.text[:300]}"})
        try:
            return r.json()
        except ValueError:
            raise RpcError({"code": -3, "message": f"HTTP {r.status_code}: {r.text[:300]}"})

    def open(self) -> Session:
        if self.modern:
            return self
        body = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": PROTO, "capabilities": {}, "clientInfo": {"name": "difz", "version": "0"}},
        }
        r = self.client.post(self._target(), headers=self._headers(), content=json.dumps(body))
        r.raise_for_status()
        self.sid = r.headers.get("mcp-session-id")
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    def request(self, method: str, params: dict) -> dict:
        """The JSON-RPC answer: {"result": ...} or {"error": ...}."""
        with _ID_LOCK:
            self.next_id += 1
            rid = self.next_id
        if self.modern:
            params = {
                **params,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "difz", "version": "0"},
                },
            }
        msg = self._post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        assert msg is not None
        return {k: msg[k] for k in ("result", "error") if k in msg}

    def call(self, tool: str, arguments: dict) -> dict:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def close(self) -> None:
        try:
            if self.sid:
                self.client.delete(self.url, headers=self._headers())
        except httpx.HTTPError:
            pass
        self.client.close()
