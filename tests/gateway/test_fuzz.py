"""Issue 13, done-criterion: a bounded fuzz run over loopback.

At least 5,000 generated HTTP/JSON-RPC messages (seeded, so a failure can be
replayed) against a real `mcpgw serve` replaying the embedded default cassette:
well-formed and malformed JSON, every kind of id, batches, notifications,
responses, wrong headers, both protocol eras, valid and made-up sessions. No
answer may be a 500, no connection may be dropped, and afterwards an ordinary
client call is answered.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time

import anyio
import httpx
from mcp import Client

from tests.conftest import ROOT, misbehaving_entry

MESSAGES = 5200
WORKERS = 8
SEED = 1313
METHODS = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "resources/subscribe",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "no/such/method",
    "",
    "💥",
]
IDS = [0, 1, 7, "7", -1, 2**53, 2**70, "", "x" * 300, None, True, 1.5, [1], {}, "ñ"]
VERSIONS = [None, "2025-06-18", "2025-03-26", "2024-11-05", "2026-07-28", "1999-01-01", "garbage"]


def junk(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 2**31, 2**64 + 1, 1e308, -0.0, 3.14])
    if kind == 2:
        return "".join(rng.choice('abc"\\\n\u0000é🙂{}[]') for _ in range(rng.randrange(12)))
    if kind == 3:
        return "y" * rng.randrange(5000)
    if kind in (4, 5):
        return rng.choice(["get_current_time", "add", "../../etc/passwd", "file:///etc/passwd", "memory://x"])
    if kind in (6, 7):
        return {
            rng.choice(["name", "arguments", "uri", "_meta", "cursor", "level", "ref", "argument", "x"]): junk(
                rng, depth + 1
            )
            for _ in range(rng.randrange(4))
        }
    return [junk(rng, depth + 1) for _ in range(rng.randrange(4))]


def message(rng: random.Random, tools: list[str]) -> dict | list:
    method = rng.choice(METHODS)
    body: dict = {"jsonrpc": rng.choice(["2.0", "2.0", "2.0", "1.0", 2])}
    if method:
        body["method"] = method
    if rng.random() < 0.8:
        body["id"] = rng.choice(IDS)
    if method == "tools/call" and tools and rng.random() < 0.7:
        body["params"] = {"name": rng.choice(tools), "arguments": junk(rng)}
    elif rng.random() < 0.8:
        body["params"] = junk(rng)
    if method is None or rng.random() < 0.05:
        body = {"jsonrpc": "2.0", "id": rng.choice(IDS), rng.choice(["result", "error"]): junk(rng)}
    if rng.random() < 0.05:
        return [body, message(rng, tools)] if rng.random() < 0.5 else []
    return body


def raw_body(rng: random.Random, tools: list[str]) -> bytes:
    roll = rng.random()
    if roll < 0.70:
        return json.dumps(message(rng, tools)).encode()
    if roll < 0.78:
        text = json.dumps(message(rng, tools))
        return text[: rng.randrange(len(text) + 1)].encode()  # cut short
    if roll < 0.83:
        depth = rng.choice([50, 65, 500, 1000, 5000])
        return b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' + b"[" * depth + b"]" * depth + b"}"
    if roll < 0.88:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))  # binary noise, invalid UTF-8
    if roll < 0.92:
        return rng.choice(
            [
                b"",
                b"null",
                b"1",
                b'"x"',
                b"NaN",
                b'{"id":1,"id":2,"method":"ping","jsonrpc":"2.0"}',
                b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
                b"\xef\xbb\xbf{}",
            ]
        )
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": rng.choice(tools or ["x"]), "arguments": {"a": "z" * rng.randrange(200_000)}},
        }
    ).encode()


def headers(rng: random.Random, sessions: list[str], port: int) -> dict[str, str]:
    h = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "host": f"127.0.0.1:{port}",
    }
    roll = rng.random()
    if roll < 0.05:
        h["content-type"] = rng.choice(["text/plain", "", "application/json; charset=latin-1", "application/jsonx"])
    elif roll < 0.10:
        h["accept"] = rng.choice(["", "text/html", "application/json", "text/event-stream", "*/*"])
    elif roll < 0.13:
        h["host"] = rng.choice(["evil.example", "", f"localhost:{port}", "[::1]"])
    elif roll < 0.16:
        h["origin"] = rng.choice(["http://evil.example", "null", f"http://127.0.0.1:{port}", "file://"])
    if sessions and rng.random() < 0.5:
        h["mcp-session-id"] = rng.choice(sessions)
    elif rng.random() < 0.1:
        h["mcp-session-id"] = rng.choice(["nope", "0" * 32, "~!@#"])
    version = rng.choice(VERSIONS)
    if version is not None:
        h["mcp-protocol-version"] = version
    return {k: v for k, v in h.items() if v != "" or k == "host"}


class RawConnection:
    """A bare HTTP/1.1 keep-alive client: cheap enough that the gateway, not the client, is what is measured.
    A connection the gateway closes without saying `Connection: close` first counts as dropped."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.stream = None
        self.buffer = b""

    async def close(self) -> None:
        if self.stream is not None:
            await self.stream.aclose()
        self.stream, self.buffer = None, b""

    async def request(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        if self.stream is None:
            self.stream = await anyio.connect_tcp("127.0.0.1", self.port)
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        await self.stream.send(head.encode("latin-1") + f"content-length: {len(body)}\r\n\r\n".encode() + body)
        raw_head = await self._until(b"\r\n\r\n")
        lines = raw_head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        if "content-length" in fields:
            answer = await self._exactly(int(fields["content-length"]))
        elif fields.get("transfer-encoding") == "chunked":
            answer = b""
            while True:
                size = int((await self._until(b"\r\n")).split(b";")[0], 16)
                answer += await self._exactly(size)
                await self._exactly(2)
                if size == 0:
                    break
        else:
            raise ValueError(f"answer without length: {raw_head!r}")
        if fields.get("connection") == "close":
            await self.close()
        return status, answer

    async def _fill(self) -> None:
        assert self.stream is not None
        self.buffer += await self.stream.receive()

    async def _until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            await self._fill()
        found, _, self.buffer = self.buffer.partition(marker)
        return found

    async def _exactly(self, n: int) -> bytes:
        while len(self.buffer) < n:
            await self._fill()
        found, self.buffer = self.buffer[:n], self.buffer[n:]
        return found


def process_cpu_s(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_fuzzed_messages_never_get_a_500_or_a_dropped_connection(gateway_factory, tmp_path):
    cassettes = tmp_path / "cassettes"
    shutil.copytree(ROOT / "cassettes" / "default", cassettes / "test", ignore=shutil.ignore_patterns("runs"))
    gateway = gateway_factory(
        "version: 1\nservers:\n" + misbehaving_entry("unused"), "--mode", "replay", "--log-cassette", "fuzz-log"
    )
    port = int(gateway.base.rsplit(":", 1)[1])
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}},
    }
    base_headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    with httpx.Client(timeout=30) as client:
        sessions = [
            client.post(gateway.url, json=init, headers=base_headers).headers["mcp-session-id"] for _ in range(4)
        ]
        listing = client.post(
            gateway.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={**base_headers, "mcp-session-id": sessions[0], "mcp-protocol-version": "2025-06-18"},
        )
    tools = [t["name"] for t in listing.json()["result"]["tools"]]
    assert len(tools) > 50

    statuses: dict[int, int] = {}
    failures: list[str] = []
    sent = 0

    async def worker(index: int) -> None:
        nonlocal sent
        rng = random.Random(SEED * 100 + index)
        connection = RawConnection(port)
        try:
            for _ in range(MESSAGES // WORKERS + 1):
                method = "POST" if rng.random() < 0.95 else rng.choice(["GET", "DELETE", "PUT", "PATCH"])
                path = "/mcp" if rng.random() < 0.95 else rng.choice(["/", "/status", "/healthz", "/mcp/x", "/%00"])
                hdrs = headers(rng, sessions, port)
                if method == "GET" and path == "/mcp":
                    hdrs["accept"] = "application/json"  # a real event stream would stay open: not what this probes
                if method == "DELETE" and "mcp-session-id" in hdrs:
                    hdrs["mcp-session-id"] = "not-a-session"  # keep the fuzz sessions alive
                try:
                    status, body = await connection.request(method, path, hdrs, raw_body(rng, tools))
                except (OSError, anyio.EndOfStream, anyio.BrokenResourceError, ValueError) as exc:
                    failures.append(f"dropped: {type(exc).__name__}: {exc}")
                    await connection.close()
                    continue
                statuses[status] = statuses.get(status, 0) + 1
                if status >= 500:
                    failures.append(f"{status} {body[:200]!r}")
                sent += 1
        finally:
            await connection.close()

    async def all_workers() -> None:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for i in range(WORKERS):
                    tg.start_soon(worker, i)

    cpu_before = process_cpu_s(gateway.process.pid)
    started = time.monotonic()
    anyio.run(all_workers)
    elapsed = time.monotonic() - started
    print(
        f"fuzz: {sent} messages in {elapsed:.1f} s (gateway CPU {process_cpu_s(gateway.process.pid) - cpu_before:.1f} s); "
        f"statuses {dict(sorted(statuses.items()))}"
    )
    assert sent >= 5000 and elapsed < 60
    assert failures == [], failures[:10]
    assert statuses.get(503, 0) == 0  # no lockout either
    assert len(statuses) > 5  # the fuzz reached many paths, not one refusal

    async def normal_call() -> str:
        with anyio.fail_after(30):
            async with Client(gateway.url, mode="legacy") as mcp_client:
                result = await mcp_client.call_tool("time__get_current_time", {"timezone": "America/New_York"})
                return result.content[0].text

    assert "America/New_York" in anyio.run(normal_call)
    assert gateway.process.poll() is None
    assert "Traceback" not in gateway.log()
