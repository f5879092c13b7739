"""`/v1/chat/completions` and `/v1/models` on the gateway, in the gateway's mode.

    live    forward to the model endpoint
    record  forward, write the exchange into the cassette, answer once it is committed
    replay  answer from the cassette; no model endpoint is needed; a miss is an error
            (HTTP 409, type `replay_miss`) saying what differs from the nearest recording
    hybrid  replay, and take misses live (recorded)

Model completions are one more kind of exchange, played by the same
`cassette.player.Player` as an MCP server's calls: keyed by `cassette.state` as a
stateless server (the request body: sorted keys, ids of nothing: a chat request
has none) under the pseudo-server `@model`, so model exchanges sit in the same
`exchanges` database as tool exchanges, and never diverge; recorded, as they are,
through cassette.recorder.Recorder. Lanes are
chosen as on `/mcp` (gateway.sessions.client_identity): a run id from `?run=` or the
`X-Run-Id` header, else one lane per client (`<default run>/client-<id>`, the
`mcpgw-client` cookie the `openai` client keeps, else its connection), so
untagged clients never take each other's answers. Identical requests in a lane
are answered in recorded order from the recorded lane it follows (cassette.lanes;
an untagged client is bound to a recorded lane of its own: `bind_untagged`).
Every exchange is also a call-log record (llm.call_record) beside the run's tool calls.
A streamed answer is forwarded chunk by chunk and its closing `[DONE]` is sent
only after the exchange is committed.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route, request_response

from mcpgw.cassette.lane_table import MAX_LANES
from mcpgw.cassette.misses import describe_model_miss
from mcpgw.cassette.player import HIT, LIVE, PlayDecision, Player
from mcpgw.cassette.recorder import Recorder
from mcpgw.cassette.redaction import Redactor
from mcpgw.cassette.state import StateModel
from mcpgw.cassette.store import StoreWriteError
from mcpgw.gateway.routing.router import Caller
from mcpgw.gateway.sessions import client_identity
from mcpgw.gateway.sessions.request_context import posted_json
from mcpgw.llm.answer import DONE, ModelAnswer, error_body
from mcpgw.llm.call_record import model_record
from mcpgw.llm.untagged_refusal import Strangers
from mcpgw.llm.upstream import LiveModel, ModelUnreachable

T = TypeVar("T")
MODEL_SERVER = "@model"  # not a valid server id, so never confused with a tool server's exchanges
MODEL = StateModel(MODEL_SERVER, tracked=False)  # a conversation is asked whole: no state between requests
CHAT = "/v1/chat/completions"
MODELS = "/v1/models"
# Azure OpenAI clients (MCP-Bench's model and judge clients) post here, the deployment naming the model.
AZURE_CHAT = "/openai/deployments/{deployment}/chat/completions"


class ModelPassthrough:
    def __init__(
        self,
        mode: str,
        live: LiveModel | None,
        *,
        cassette: Any = None,
        recorded_entries: list[dict[str, Any]] | None = None,
        redact: Redactor | None = None,
        default_run: str = "default",
        past_end: str = "repeat",
        call_log: Any = None,
        max_lanes: int = MAX_LANES,
        recorded_runs: set[str] | None = None,
        trace_exchange: Callable[[dict[str, Any]], str | None] | None = None,
    ) -> None:
        self.mode = mode
        self.live = live
        self.cassette = cassette  # written in record and hybrid
        self.recorded_entries = recorded_entries if recorded_entries is not None else []
        # the same mode switch, lanes and keys as a tool server's (cassette.player); untagged clients
        # are bound to a recorded conversation of their own (cassette.lanes)
        self.player = Player(
            MODEL, self.recorded_entries, mode=mode, past_end=past_end, bind_untagged=True, max_lanes=max_lanes
        )
        # the tagged runs of the recording's tool calls: with two or more, an untagged client may be refused (llm.untagged_refusal)
        self.strangers = Strangers(recorded_runs or set(), self.player.rule.by_key)
        self.call_log = call_log  # recorder.calllog.CallLog: the tool calls' log
        self.redact = redact or Redactor()
        self.recorder = Recorder(cassette, self.redact)  # cassette.recorder: the one way an exchange is recorded
        self.default_run = default_run
        self.past_end = past_end
        self.hits = 0
        self.misses = 0
        self.forwarded = 0
        # When traces are exported (telemetry.tracing.Tracing.begin_exchange): a forwarded exchange's span
        # chosen up front (noted in the record it is given), its traceparent sent to the model endpoint.
        self.trace_exchange = trace_exchange

    def routes(self, mint: Any = None) -> list[Route]:
        """The same client identity as /mcp: an untagged client gets a lane of its own (`mint`: with
        --workers, identities this worker owns, so the client's later requests are routed back here)."""

        def identity(app: Any) -> Any:
            return client_identity.ClientIdentity(app, mint=mint)

        return [
            Route(CHAT, identity(request_response(self.chat)), methods=["POST"]),
            Route(MODELS, identity(request_response(self.models)), methods=["GET"]),
            Route(AZURE_CHAT, identity(request_response(self.azure_chat)), methods=["POST"]),
        ]

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "forwarded": self.forwarded}

    # -- endpoints -------------------------------------------------------------------

    async def chat(self, request: Request) -> Response:
        raw = await request.body()
        body = posted_json(request.scope)  # parsed by the HTTP guard, strictly, as on every route
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object", "invalid_request_error")
        return await self._exchange(request, CHAT, body, raw)

    async def azure_chat(self, request: Request) -> Response:
        """An Azure OpenAI chat request (`api-version` in the query, the key in `api-key`) is the same
        exchange as on /v1/chat/completions with the deployment as the model: forwarded to the model
        endpoint, recorded and replayed under the same key, whichever of the two a client used."""
        body = posted_json(request.scope)
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object", "invalid_request_error")
        body = {**body, "model": request.path_params["deployment"]}
        return await self._exchange(request, CHAT, body, json.dumps(body).encode())

    async def models(self, request: Request) -> Response:
        return await self._exchange(request, MODELS, None)

    # -- play / record / refuse, decided in one place -------------------------------------

    async def _exchange(
        self, request: Request, path: str, body: dict[str, Any] | None, raw: bytes | None = None
    ) -> Response:
        refusal = _foreign_origin(request)
        if refusal is not None:
            return _error(403, refusal, "forbidden")
        run = client_identity.tagged_run(request)
        caller = Caller(
            run_id=run or self.default_run,
            tagged=bool(run),
            session_id=client_identity.client_of(request),
            client_name=request.headers.get("user-agent"),
        )
        lane = caller.lane
        if not caller.tagged and self.player.replays and len(self.strangers.runs) > 1 and not self.player.bound(lane):
            key = self.player.model.keyed(path, body or {}, "").key
            why = self.strangers.refusal(key)
            if why is not None:
                self.misses += 1
                _Logger(self.call_log, self.redact, path, body, caller, key)("miss", status=409, error=why)
                return _error(409, why, "replay_miss")
        turn = self.player.play(lane, path, body or {})
        key = turn.call.key
        log = _Logger(self.call_log, self.redact, path, body, caller, key)
        log.traceparent = request.headers.get("traceparent")  # a client's trace context: its span joins it
        if turn.outcome == HIT:
            assert turn.entry is not None
            self.hits += 1
            answer = ModelAnswer.from_entry(turn.entry["result"])
            log("hit", answer)  # before the answer goes out: see _response
            return _response(answer)
        if turn.missed:
            self.misses += 1
        if turn.outcome != LIVE:  # a replay miss (a stateless kind never diverges)
            message = describe_model_miss(path, body or {}, lane, self.recorded_entries)
            log("miss", status=409, error=message)
            return _error(409, message, "replay_miss")
        if self.live is None:
            message = (
                "the gateway has no model endpoint: start it with --llm-base-url URL "
                "(and the key's variable in --llm-key-env)"
            )
            log("live", status=503, error=message)
            return _error(503, message, "no_model_endpoint")
        self.forwarded += 1
        record = self.player.records
        started = time.perf_counter()
        upstream_path = path.removeprefix("/v1")  # --llm-base-url ends in /v1, as OpenAI clients expect
        traceparent = None
        if self.trace_exchange is not None:
            traceparent = self.trace_exchange(log.trace_seed())
        try:
            if body is not None and body.get("stream"):
                opened = await _unless_client_leaves(request, self.live.stream(upstream_path, body, traceparent))
                if opened is None:
                    log("live", status=499, error=CLIENT_LEFT)
                    return _error(499, CLIENT_LEFT, "client_closed_request")
                answer, events = opened
                if events is not None:
                    return StreamingResponse(
                        self._relay(events, answer, path, body, key, lane, started, record, log, turn),
                        status_code=answer.status,
                        media_type="text/event-stream",
                        headers={"Cache-Control": "no-cache"},
                    )
            else:
                answer = await _unless_client_leaves(
                    request, self.live.send("POST" if body is not None else "GET", upstream_path, raw, traceparent)
                )
                if answer is None:
                    log("live", status=499, error=CLIENT_LEFT)
                    return _error(499, CLIENT_LEFT, "client_closed_request")  # read by nobody: said for the log's sake
        except ModelUnreachable as exc:
            log("live", status=502, error=str(exc))
            return _error(502, str(exc), "model_unreachable")
        if record:
            try:
                await self._record(path, body, key, lane, answer, started, turn)
            except StoreWriteError as exc:
                message = f"the model answered, but the recording could not be written: {exc}"
                log("live", status=500, error=message)
                return _error(500, message, "cassette_error")
        log("recorded" if record else "live", answer)
        return _response(answer)

    async def _relay(
        self,
        events: AsyncGenerator[str, None],
        answer: ModelAnswer,
        path: str,
        body: dict[str, Any],
        key: str,
        lane: str,
        started: float,
        record: bool,
        log: _Logger,
        turn: PlayDecision,
    ) -> AsyncIterator[bytes]:
        seen: list[str] = []
        try:
            try:
                async for data in events:
                    seen.append(data)
                    yield _sse(data)
            except ModelUnreachable as exc:  # not an answer: not recorded, and the client is told
                log("live", status=502, error=str(exc))
                yield _sse(json.dumps(error_body(str(exc), "model_unreachable")))
                return
            answer.events = seen
            if record:
                try:
                    await self._record(path, body, key, lane, answer, started, turn)
                except StoreWriteError as exc:
                    log("live", status=500, error=f"recording failed: {exc}")
                    yield _sse(json.dumps(error_body(f"recording failed: {exc}", "cassette_error")))
                    return
            log("recorded" if record else "live", answer)
            yield _sse(DONE)
        finally:
            if not log.done:  # closed mid-stream: its client left (Starlette stops the stream of a client that did)
                log("live", status=499, error=CLIENT_LEFT_MID_STREAM)
                with anyio.CancelScope(shield=True):
                    await events.aclose()  # the model's stream is closed with it, not left to the garbage collector

    async def _record(
        self,
        path: str,
        body: dict[str, Any] | None,
        key: str,
        lane: str,
        answer: ModelAnswer,
        started: float,
        turn: PlayDecision,
    ) -> None:
        entry = await self.recorder.record(
            key,
            MODEL_SERVER,
            path,
            body or {},
            {"result": answer.as_entry()},
            lane=lane,
            latency_ms=(time.perf_counter() - started) * 1000,
        )
        if self.player.hybrid:  # later identical requests in this lane replay what was just taken live
            self.player.took_live(turn, lane, entry)
            self.recorded_entries.append(entry)

    async def aclose(self) -> None:
        if self.live is not None:
            await self.live.aclose()


class _Logger:
    """Writes one exchange's call-log record (llm.call_record), timed from its creation."""

    def __init__(
        self, call_log: Any, redact: Redactor, path: str, body: dict[str, Any] | None, caller: Caller, key: str
    ) -> None:
        self.call_log, self.redact, self.path, self.body, self.caller, self.key = (
            call_log,
            redact,
            path,
            body,
            caller,
            key,
        )
        self.started_at, self.started = time.time(), time.perf_counter()
        self.done = False  # its record written
        self.traceparent: str | None = None
        self.trace: dict[str, Any] = {}  # the span id and trace context chosen for it (trace_seed), put in its record

    def trace_seed(self) -> dict[str, Any]:
        """What the tracer needs to choose this exchange's span: lane, run, start, the client's traceparent."""
        self.trace = {
            "lane": self.caller.lane,
            "run_id": self.caller.run_id,
            "started_at": datetime.fromtimestamp(self.started_at, UTC).isoformat(timespec="milliseconds"),
            "client_traceparent": self.traceparent,
        }
        return self.trace

    def __call__(
        self, outcome: str, answer: ModelAnswer | None = None, *, status: int | None = None, error: str | None = None
    ) -> None:
        self.done = True
        if self.call_log is None:
            return
        self.call_log.append(
            self.redact(
                model_record(
                    server=MODEL_SERVER,
                    path=self.path,
                    body=self.body,
                    run_id=self.caller.run_id,
                    lane=self.caller.lane,
                    session_id=self.caller.session_id,
                    client_name=self.caller.client_name,
                    started_at=self.started_at,
                    started=self.started,
                    outcome=outcome,
                    answer=answer,
                    status=status,
                    error=error,
                    cassette_key=self.key,
                    traceparent=self.trace.get("client_traceparent", self.traceparent),
                    span_id=self.trace.get("span_id"),
                )
            )
        )


CLIENT_LEFT = "the client closed its connection before the model answered: the model request was cancelled"
CLIENT_LEFT_MID_STREAM = "the client closed its connection during the model's streamed answer: the stream was closed"


async def _unless_client_leaves(request: Request, call: Awaitable[T]) -> T | None:
    """`call`'s value, or None when the client disconnects first: its model request is then cancelled (nobody
    would read the answer, and a model endpoint bills for it), and the gateway's shutdown does not wait for it."""
    value: T | None = None
    failure: Exception | None = None
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                pass  # the body was read whole already: the client's receive has nothing else to say
            group.cancel_scope.cancel()

        group.start_soon(watch)
        try:
            value = await call
        except Exception as exc:  # noqa: BLE001 - raised below as it is, not inside the task group's ExceptionGroup
            failure = exc
        group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return value


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


def _response(answer: ModelAnswer) -> Response:
    """The answer as the client gets it. Its call-log record is written before (as a streamed answer's is before
    its [DONE]): once a client has an answer it may act on it at once, and the tool call it makes is logged
    in the turn that reads it (gateway.runtime.eager), so a record written after the answer was sent could follow that
    call's in the run's log, and a replay's log differ from the recording's in its order."""
    if answer.events is not None:

        async def replay() -> AsyncIterator[bytes]:
            for data in answer.events or ():
                yield _sse(data)
            yield _sse(DONE)

        return StreamingResponse(
            replay(), status_code=answer.status, media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
        )
    if answer.raw is not None:  # forwarded as the model sent it: no second encoding
        return Response(answer.raw, status_code=answer.status, media_type=answer.content_type)
    if isinstance(answer.body, str):
        return Response(answer.body, status_code=answer.status, media_type=answer.content_type)
    return JSONResponse(answer.body, status_code=answer.status)


# Refusals a retry cannot change: the OpenAI SDKs retry 409 and 5xx unless told not to
# (three requests, and three logged misses, for one replay miss).
_FINAL = {"replay_miss", "no_model_endpoint"}


def _error(status: int, message: str, kind: str) -> JSONResponse:
    headers = {"x-should-retry": "false"} if kind in _FINAL else None
    return JSONResponse(error_body(message, kind), status_code=status, headers=headers)
