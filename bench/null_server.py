"""The fastest answer an MCP client can get over HTTP: a bench-only server that does no MCP work.

    python bench/null_server.py PORT

Raw asyncio, HTTP/1.1 with keep-alive, one canned JSON answer per method: an
`initialize` result (a session id for the handshake era), `server/discover` for
2026-07-28 clients, one tool `echo` that echoes, 202 for notifications, 405 for
the GET stream. No validation, no SDK, no routing: what a client measures
against it is the client's own cost plus the loopback, the floor under any
server, proxy or gateway (compare_peers prints it as a row). Never use it for
anything else.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid

TOOL = {
    "name": "echo",
    "description": "Echoes the message",
    "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
}
CAPABILITIES = {"tools": {"listChanged": False}}
INFO = {"name": "null", "version": "0"}


def result_for(message: dict) -> dict:
    """The answer, shaped for both eras (2026-07-28 results carry resultType; handshake clients ignore it)."""
    return {**_result(message), "resultType": "complete"}


def _result(message: dict) -> dict:
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion"), "capabilities": CAPABILITIES, "serverInfo": INFO}
    if method == "server/discover":
        return {
            "cacheScope": "public",
            "capabilities": CAPABILITIES,
            "serverInfo": INFO,
            "supportedVersions": ["2026-07-28"],
            "ttlMs": 0,
        }
    if method == "tools/list":
        return {"tools": [TOOL], "ttlMs": 0, "cacheScope": "public"}
    if method == "tools/call":
        text = f"Echo: {(params.get('arguments') or {}).get('message')}"
        return {"content": [{"type": "text", "text": text}], "isError": False}
    return {}


def response(status: int, body: bytes = b"", extra: str = "") -> bytes:
    head = f"HTTP/1.1 {status} X\r\ncontent-length: {len(body)}\r\ncontent-type: application/json\r\n{extra}\r\n"
    return head.encode() + body


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method = lines[0].split(" ", 1)[0]
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if method != "POST":
                writer.write(response(405 if method == "GET" else 200))
                continue
            message = json.loads(body)
            if "id" not in message:
                writer.write(response(202))
                continue
            answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result_for(message)}).encode()
            extra = f"mcp-session-id: {uuid.uuid4().hex}\r\n" if message.get("method") == "initialize" else ""
            writer.write(response(200, answer, extra))
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int) -> None:
    server = await asyncio.start_server(handle, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
