"""`/v1/chat/completions` and `/v1/models` on the gateway, in the gateway's mode.

    live    forward to the model endpoint
    record  forward, write the exchange into the cassette, answer once it is committed
    replay  answer from the cassette; no model endpoint is needed; a miss is an error
            (HTTP 409, type `replay_miss`) saying what differs from the nearest recording
    hybrid  replay, and take misses live (recorded)

Keys are `recorder.keys.request_key` over the request body (sorted keys, ids of
nothing: a chat request has none), under the pseudo-server `@model`, so model
exchanges sit in the same `exchanges` database as tool exchanges. Identical
requests in one run are answered in recorded order (a FIFO lane per run id and
key), as on `/mcp`; the run id comes from `?run=` or the `X-Run-Id` header.
A streamed answer is forwarded chunk by chunk and its closing `[DONE]` is sent
only after the exchange is committed.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from llm.answer import DONE, ModelAnswer, error_body
from llm.miss import describe_model_miss
from llm.upstream import LiveModel, ModelUnreachable
from recorder.keys import request_key
from recorder.redaction import Redactor
from recorder.store import StoreWriteError

MODEL_SERVER = "@model"  # not a valid server id, so never confused with a tool server's exchanges
CHAT = "/v1/chat/completions"
MODELS = "/v1/models"


class ModelPassthrough:
    def __init__(self, mode: str, live: LiveModel | None, *, cassette: Any = None,
                 recorded: dict[str, list[dict[str, Any]]] | None = None, recorded_entries: list[dict[str, Any]] | None = None,
                 redact: Redactor | None = None, default_run: str = "default", past_end: str = "repeat") -> None:
        self.mode = mode
        self.live = live
        self.cassette = cassette  # written in record and hybrid
        self.recorded = recorded if recorded is not None else {}  # key -> entries in recorded order
        self.recorded_entries = recorded_entries if recorded_entries is not None else []
        self.redact = redact or Redactor()
        self.default_run = default_run
        self.past_end = past_end
        self._lanes: Counter[tuple[str, str]] = Counter()
        self.hits = 0
        self.misses = 0
        self.forwarded = 0

    def routes(self) -> list[Route]:
        return [Route(CHAT, self.chat, methods=["POST"]), Route(MODELS, self.models, methods=["GET"])]

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "forwarded": self.forwarded}

    # -- endpoints -------------------------------------------------------------------

    async def chat(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw)
        except ValueError as exc:
            return _error(400, f"request body is not JSON: {exc}", "invalid_request_error")
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object", "invalid_request_error")
        return await self._exchange(request, CHAT, body, raw)

    async def models(self, request: Request) -> Response:
        return await self._exchange(request, MODELS, None)

    # -- play / record / refuse, decided in one place -------------------------------------

    async def _exchange(self, request: Request, path: str, body: dict[str, Any] | None, raw: bytes | None = None) -> Response:
        refusal = _foreign_origin(request)
        if refusal is not None:
            return _error(403, refusal, "forbidden")
        lane = request.query_params.get("run") or request.headers.get("x-run-id") or self.default_run
        key = request_key(MODEL_SERVER, path, body or {})
        if self.mode in ("replay", "hybrid"):
            entry = self._take(lane, key)
            if entry is not None:
                self.hits += 1
                return _respond(ModelAnswer.from_entry(entry["result"]))
            self.misses += 1
            if self.mode == "replay":
                return _error(409, describe_model_miss(path, body or {}, lane, self.recorded_entries), "replay_miss")
        if self.live is None:
            return _error(503, "the gateway has no model endpoint: start it with --llm-base-url URL "
                               "(and the key's variable in --llm-key-env)", "no_model_endpoint")
        self.forwarded += 1
        record = self.mode in ("record", "hybrid")
        started = time.perf_counter()
        upstream_path = path.removeprefix("/v1")  # --llm-base-url ends in /v1, as OpenAI clients expect
        try:
            if body is not None and body.get("stream"):
                answer, events = await self.live.stream(upstream_path, body)
                if events is not None:
                    return StreamingResponse(self._relay(events, answer, path, body, key, lane, started, record),
                                             status_code=answer.status, media_type="text/event-stream",
                                             headers={"Cache-Control": "no-cache"})
            else:
                answer = await self.live.send("POST" if body is not None else "GET", upstream_path, raw)
        except ModelUnreachable as exc:
            return _error(502, str(exc), "model_unreachable")
        if record:
            try:
                await self._record(path, body, key, lane, answer, started)
            except StoreWriteError as exc:
                return _error(500, f"the model answered, but the recording could not be written: {exc}", "cassette_error")
        return _respond(answer)

    def _take(self, lane: str, key: str) -> dict[str, Any] | None:
        entries = self.recorded.get(key)
        if not entries:
            return None
        index = self._lanes[(lane, key)]
        self._lanes[(lane, key)] += 1
        if index < len(entries):
            return entries[index]
        return entries[-1] if self.past_end == "repeat" else None

    async def _relay(self, events: AsyncIterator[str], answer: ModelAnswer, path: str, body: dict[str, Any],
                     key: str, lane: str, started: float, record: bool) -> AsyncIterator[bytes]:
        seen: list[str] = []
        try:
            async for data in events:
                seen.append(data)
                yield _sse(data)
        except ModelUnreachable as exc:  # not an answer: not recorded, and the client is told
            yield _sse(json.dumps(error_body(str(exc), "model_unreachable")))
            return
        answer.events = seen
        if record:
            try:
                await self._record(path, body, key, lane, answer, started)
            except StoreWriteError as exc:
                yield _sse(json.dumps(error_body(f"recording failed: {exc}", "cassette_error")))
                return
        yield _sse(DONE)

    async def _record(self, path: str, body: dict[str, Any] | None, key: str, lane: str, answer: ModelAnswer,
                      started: float) -> None:
        entry = {
            "key": key, "server": MODEL_SERVER, "method": path, "params": self.redact(body or {}),
            "result": self.redact(answer.as_entry()), "lane": lane,
            "recorded_at": time.time(), "latency_ms": round((time.perf_counter() - started) * 1000, 3), "source": "live",
        }
        await self.cassette.record_exchange(entry, wait=True)
        if self.mode == "hybrid":  # later identical requests in this lane replay what was just taken live
            self.recorded.setdefault(key, []).append(entry)
            self._lanes[(lane, key)] = len(self.recorded[key])
            self.recorded_entries.append(entry)

    async def aclose(self) -> None:
        if self.live is not None:
            await self.live.aclose()


def _foreign_origin(request: Request) -> str | None:
    """The gateway spends the model key on behalf of its callers: a web page's request (an Origin
    that is not loopback) must not reach it, as /mcp refuses DNS-rebinding requests."""
    origin = request.headers.get("origin")
    if origin is None:
        return None
    if urlsplit(origin).hostname in ("127.0.0.1", "localhost", "::1"):
        return None
    return f"requests from web pages of other origins ({origin}) are refused: the gateway holds the model's key"


def _sse(data: str) -> bytes:
    return f"data: {data}\n\n".encode()


def _respond(answer: ModelAnswer) -> Response:
    if answer.events is not None:
        async def replay() -> AsyncIterator[bytes]:
            for data in answer.events or ():
                yield _sse(data)
            yield _sse(DONE)

        return StreamingResponse(replay(), status_code=answer.status, media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})
    if answer.raw is not None:  # forwarded as the model sent it: no second encoding
        return Response(answer.raw, status_code=answer.status, media_type=answer.content_type)
    if isinstance(answer.body, str):
        return Response(answer.body, status_code=answer.status, media_type=answer.content_type)
    return JSONResponse(answer.body, status_code=answer.status)


def _error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse(error_body(message, kind), status_code=status)
