"""Issue 25: a stdio line fuzzer against `mcpgw serve --stdio` (the embedded default cassette, replayed).

Valid JSON-RPC lines (pings, tool calls, lists) are mutated byte by byte (seeded: flip, insert, delete,
duplicate a span, splice in a lone-surrogate escape, NaN, a BOM, deep brackets), never into a line
break. Every line that is a request with a usable id must be answered under that id, every other
non-blank line that is not JSON-RPC gets an id-null error, and the gateway must not exit.
MCPGW_FUZZ_LINES sets the count (default 400, a few seconds); MCPGW_FUZZ_SEED the seed.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time

import anyio

from mcpgw.gateway.endpoints.http_guard import _encodable, _shape_problem, parse_json, valid_id
from mcpgw.gateway.stdio.stdio_guard import _id_of
from tests.conftest import ROOT
from tests.gateway.test_bad_input import run
from tests.gateway.test_stdio_guard import INIT, serve_stdio

LINES = int(os.environ.get("MCPGW_FUZZ_LINES", "400"))
SEED = int(os.environ.get("MCPGW_FUZZ_SEED", "2525"))
SPLICES = [
    b"\\ud800",
    b"\\udfff",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1e999",
    b"\xef\xbb\xbf",
    b"[" * 80,
    b"\xed\xa0\x80",
    b'"',
    b"\\",
    b"{}",
    b"null",
    b'"id":',
    b"\x00",
    b"\xff",
    b"\\u0000",
    b'"\\ud83d\\ude00"',
]


def seed_line(rng: random.Random, n: int) -> dict:
    rid: object = f"f{n}" if rng.random() < 0.7 else n + 1000
    kind = rng.randrange(5)
    if kind == 0:
        return {"jsonrpc": "2.0", "id": rid, "method": "ping"}
    if kind == 1:
        return {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": "everything__get-sum", "arguments": {"a": rng.randrange(100), "b": 2}},
        }
    if kind == 2:
        return {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": "everything__echo", "arguments": {"message": "hello é 🙂"}},
        }
    if kind == 3:
        return {"jsonrpc": "2.0", "id": rid, "method": "tools/list"}
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": rid, "progress": 1}}


def mutate(rng: random.Random, line: bytes) -> bytes:
    data = bytearray(line)
    for _ in range(rng.randrange(1, 4)):
        op = rng.randrange(6)
        at = rng.randrange(len(data) + 1)
        quotes = [i + 1 for i, byte in enumerate(data) if byte == ord('"')]
        if op == 5 and quotes:  # inside a string, where an escape keeps the JSON valid
            at = rng.choice(quotes)
            data[at:at] = rng.choice([b"\\ud800", b"\\udfff", b"\\ud83d\\ude00", b"\\u0000", b"\xc3\xa9"])
        elif op == 0 and data:
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif op == 1:
            data[at:at] = bytes([rng.randrange(256)])
        elif op == 2 and data:
            del data[at : at + rng.randrange(1, 8)]
        elif op == 3:
            data[at:at] = rng.choice(SPLICES)
        else:
            end = min(len(data), at + rng.randrange(1, 16))
            data[at:at] = data[at:end]
    return bytes(data).replace(b"\n", b" ").replace(b"\r", b" ")


def expectation(line: bytes) -> object:
    """The id an answer must carry, "null" for an id-null refusal, or None when no answer is due."""
    text = line.decode("utf-8", "replace").lstrip("\ufeff")  # as the gateway reads it
    if not text.strip():
        return None
    message, problem = parse_json(text.encode("utf-8", "surrogatepass"))
    if problem is not None:  # refused, under the id Python's lenient parser still finds (NaN parses there)
        found = _id_of(text)
        return "null" if found is None else found
    answer_id = message.get("id") if isinstance(message, dict) else None
    usable = valid_id(answer_id) and (not isinstance(answer_id, str) or _encodable(answer_id))
    if _shape_problem(message) is not None:  # refused by the guard, under the id when it is usable
        return answer_id if usable else "null"
    if "method" not in message or "id" not in message:
        return None  # a notification, or a response to a server request
    return answer_id


def test_mutated_stdio_lines_are_each_answered_and_the_gateway_lives(tmp_path):
    rng = random.Random(SEED)
    lines: list[bytes] = []
    for n in range(LINES):
        line = json.dumps(seed_line(rng, n), ensure_ascii=False).encode()
        lines.append(mutate(rng, line) if rng.random() < 0.85 else line)
    expected = [expectation(line) for line in lines]
    ids = [e for e in expected if e not in (None, "null", "maybe")]
    wanted = {json.dumps(i) for i in ids if ids.count(i) == 1}  # a duplicated id may be refused as in flight
    nulls_due = sum(1 for e in expected if e == "null")

    async def go() -> tuple[set[str], int, int | None]:
        command = serve_stdio(tmp_path)
        async with await anyio.open_process(command, cwd=ROOT, stderr=subprocess.DEVNULL) as process:
            payload = [
                json.dumps(INIT).encode(),
                b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                *lines,
                b'{"jsonrpc":"2.0","id":"end","method":"ping"}',
            ]
            got: set[str] = set()
            nulls = 0
            buffer = b""

            async def feed() -> None:
                for line in payload:
                    await process.stdin.send(line + b"\n")

            async with anyio.create_task_group() as tg:
                tg.start_soon(feed)
                with anyio.move_on_after(60 + LINES / 20):
                    while not (wanted <= got and '"end"' in got and nulls >= nulls_due):
                        buffer += await process.stdout.receive()
                        *complete, buffer = buffer.split(b"\n")
                        for raw in complete:
                            message = json.loads(raw)  # every line out is JSON
                            if message.get("id") is None and "error" in message:
                                nulls += 1
                            elif "id" in message:
                                got.add(json.dumps(message["id"]))
                tg.cancel_scope.cancel()
            await process.stdin.aclose()
            code = await process.wait()
        return got, nulls, code

    started = time.monotonic()
    got, nulls, code = run(go)
    print(
        f"stdio fuzz: {LINES} lines (seed {SEED}), {len(wanted)} requests answered by id, {nulls} id-null refusals "
        f"({nulls_due} due), exit {code}, {time.monotonic() - started:.1f} s"
    )
    assert code == 0
    missing = sorted(wanted - got)
    assert not missing, [lines[i] for i, e in enumerate(expected) if json.dumps(e) in missing][:5]
    assert nulls == nulls_due
