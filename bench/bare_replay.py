"""The work a replayed `tools/call` cannot skip, with none of the gateway's layers: a bench-only lower bound.

    python bench/bare_replay.py PORT

Plain asyncio protocol, HTTP/1.1 with keep-alive, the handshake era only. Per call it does what any
replaying gateway must: split the request head, parse the JSON body, find the session, check the
arguments against the `echo` tool's schema (a string `message`), key the call (canonical JSON of the
arguments, blake2b, with the session's history, which the call moves on: `echo` declares no readOnlyHint),
look the answer up in an in-memory table (filled on first sight: a stand-in for a cassette index), build a
call-log record of the gateway's fields, pack it (msgpack) and commit it to LMDB (unsynced, as
cassette.store does), and write the JSON-RPC answer. No
guard, no limits, no cancellation, no lanes, no errors worth the name: what bench_cpu_per_call measures
against it is how much of a replayed call is layers rather than work. Never use it for anything else.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime

import lmdb
import msgpack

ECHO = {
    "name": "echo",
    "description": "Echoes the message",
    "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
}


class Replayer:
    def __init__(self) -> None:
        self.env = lmdb.open(
            tempfile.mkdtemp(prefix="bare-replay-"), max_dbs=2, map_size=1 << 32, sync=False, metasync=False
        )
        self.calls = self.env.open_db(b"calls")
        self.sessions: dict[str, bytes] = {}  # session id -> its history digest
        self.answers: dict[bytes, dict] = {}  # key -> result (the stand-in for a cassette index)
        self.seq = 0

    def answer(self, session: str, message: dict) -> dict:
        params = message.get("params") or {}
        if message.get("method") == "tools/list":
            return {"tools": [ECHO]}
        arguments = params.get("arguments") or {}
        valid = isinstance(arguments, dict) and isinstance(arguments.get("message"), str)
        canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        history = self.sessions[session]
        key = hashlib.blake2b(f"up\ntools/call\n{canonical}\n".encode() + history, digest_size=16).digest()
        self.sessions[session] = hashlib.blake2b(history + key, digest_size=16).digest()  # echo may change state
        started = time.time()
        result = self.answers.get(key)
        if result is None:
            result = self.answers[key] = {
                "content": [{"type": "text", "text": f"Echo: {arguments.get('message')}"}],
                "isError": False,
            }
        self.seq += 1
        record = {
            "seq": self.seq,
            "run_id": "default",
            "session_id": f"session-{session}",
            "started_at": _iso(started),
            "ended_at": _iso(time.time()),
            "server": "up",
            "tool": params.get("name"),
            "arguments": arguments,
            "validation": {"valid": valid, "errors": []},
            "outcome": "ok",
            "is_error": False,
            "result_digest": hashlib.blake2b(msgpack.packb(result), digest_size=12).hexdigest(),
            "cassette_key": key.hex(),
            "source": "replay",
            "endpoint": "/mcp",
        }
        with self.env.begin(write=True, db=self.calls) as txn:
            txn.put(self.seq.to_bytes(8, "big"), msgpack.packb(record))
        return result


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")


class Connection(asyncio.Protocol):
    def __init__(self, replayer: Replayer) -> None:
        self.replayer = replayer
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            lines = self.buffer[:end].decode("latin-1").split("\r\n")
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            if len(self.buffer) < end + 4 + length:
                return
            body, self.buffer = self.buffer[end + 4 : end + 4 + length], self.buffer[end + 4 + length :]
            self.respond(lines[0].split(" ", 1)[0], headers, body)

    def respond(self, method: str, headers: dict[str, str], body: bytes) -> None:
        assert self.transport is not None
        if method != "POST":
            self.transport.write(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
            return
        message = json.loads(body)
        if "id" not in message:
            self.transport.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
            return
        extra = b""
        if message.get("method") == "initialize":
            session = uuid.uuid4().hex
            self.replayer.sessions[session] = b""
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bare-replay", "version": "0"},
            }
            extra = b"mcp-session-id: " + session.encode() + b"\r\n"
        else:
            session = headers.get("mcp-session-id", "")
            if session not in self.replayer.sessions:
                self.transport.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                return
            result = self.replayer.answer(session, message)
        answer = json.dumps(
            {"jsonrpc": "2.0", "id": message["id"], "result": result}, ensure_ascii=False, separators=(",", ":")
        ).encode()
        self.transport.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
            + str(len(answer)).encode()
            + b"\r\n"
            + extra
            + b"\r\n"
            + answer
        )


async def main(port: int) -> None:
    replayer = Replayer()
    server = await asyncio.get_running_loop().create_server(lambda: Connection(replayer), "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
