"""The HTTP edge: who may talk to the gateway, and what a request body may be.

One ASGI layer around the whole Starlette app, so every route (the MCP endpoint,
`/status`, and any added later) is covered; only `/healthz` is open, for probes.
In order, before anything else reads the request:

1. Host and Origin against an allow-list (DNS rebinding: a web page whose name
   resolves to 127.0.0.1 must not reach the gateway through a browser).
2. A bearer token, when one is configured (required beyond loopback).
3. For POSTs to the MCP endpoint (and the SSE transport's message path): JSON content type, a body read under a size
   cap and a deadline (a client that stalls mid-body is cut off), JSON nested at
   most MAX_DEPTH deep, and a request id that is a string or an integer. Each
   refusal is a JSON-RPC error with a 4xx status, never a 500. Lone surrogates,
   `NaN`/`Infinity` and numbers that overflow are refused as parse errors (`parse_json`).
4. For POSTs to the model endpoint (`/v1/...`, `/openai/...`): the same body checks
   under the model's own (larger) size cap and deadline, refused in OpenAI's error shape.

The parsed message is left in the request's context (gateway.sessions.request_context) so later
layers need not parse the body again.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import json
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs

import anyio

from mcpgw.gateway.encoding.json_messages import (  # noqa: F401
    BOM,
    MAX_DEPTH,
    _encodable,
    _shape_problem,
    parse_json,
    parse_message,
    valid_id,
)
from mcpgw.gateway.errors.http_errors import replay_body, send_body, send_error, send_openai_error  # noqa: F401 - importers
from mcpgw.gateway.http.stopping import answer_if_stopped
from mcpgw.gateway.sessions.pipeline_verdicts import DECLINED, HotHead
from mcpgw.gateway.sessions.request_context import context_of

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
REFUSED = object()  # `HttpGuard.admits_body`: the guard would refuse, or read further


@dataclass
class GuardPolicy:
    allowed_hosts: set[str] = field(default_factory=set)  # lower-case host names, without port
    token: str | None = None
    max_body: int = 4 * 1024 * 1024
    body_timeout: float = 30.0  # seconds to receive a whole request body
    mcp_path: str = "/mcp"
    # The model endpoint (/v1/..., the Azure-shaped /openai/...): chats carry whole conversations, so
    # their own limits (--llm-max-body-bytes, --llm-body-timeout); refusals in OpenAI's shape.
    model_max_body: int = 4 * 1024 * 1024
    model_body_timeout: float = 120.0
    open_paths: tuple[str, ...] = (
        "/healthz",
        "/readyz",
    )  # probes (a load balancer's, k8s') carry no token; they say only up/ready
    message_paths: tuple[str, ...] = (
        "/sse/messages",
    )  # other paths whose POSTs are JSON-RPC messages (gateway.endpoints.sse)
    # REST routes whose clients read mcprouter's envelope {"code", "message"} (gateway.endpoints.router_api), not JSON-RPC
    envelope_paths: tuple[str, ...] = ()

    def takes_model_requests(self, path: str) -> bool:
        """The OpenAI-shaped model routes (mcprouter's REST routes under /v1 answer in their own shape)."""
        return path.startswith(("/v1/chat/", "/v1/completions", "/v1/embeddings", "/v1/responses", "/openai/"))

    def takes_messages(self, path: str) -> bool:
        """Paths whose POSTs are JSON-RPC messages: /mcp and the SSE message URL (per-server endpoints reach
        the guard already rewritten to these by gateway.endpoints.per_server.ServerPaths)."""
        return path == self.mcp_path or path in self.message_paths


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback address (`127.1`, `::1`, `localhost` ...)."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        return False
    # an IPv4 or IPv6 address: its host is a string (`::1%lo` with a scope)
    return bool(infos) and all(ipaddress.ip_address(cast(str, info[4][0]).split("%")[0]).is_loopback for info in infos)


def default_allowed_hosts(bind_host: str, extra: list[str] | None = None) -> set[str]:
    """Loopback names always; the bound host when it is a name or an address a client can use."""
    hosts = set(_LOOPBACK_NAMES)
    if bind_host not in ("0.0.0.0", "::", ""):
        hosts.add(_bracket(bind_host.lower()))
    hosts.update(_bracket(h.strip().lower()) for h in (extra or []) if h.strip())
    return hosts


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


@functools.lru_cache(maxsize=256)  # a client sends the same Host on every request
def _host_name(value: str) -> str:
    """`example.com:8765` -> `example.com`; `[::1]:80` -> `[::1]`; a value that is not a host with an
    optional numeric port (`localhost:80@evil.example`, `localhost:x`) is returned whole, so it
    matches no allowed name."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, port = value.partition("]")
        return name + "]" if port == "" or (port[:1] == ":" and port[1:].isdigit()) else value
    name, colon, port = value.partition(":")
    if colon and not (port.isdigit() and port.isascii()):
        return value
    return name if _HOST_CHARS.fullmatch(name) else value


_HOST_CHARS = re.compile(r"[a-z0-9._-]+")


# Headers a request carries at most once (RFC 9110 5.3: none is a list) and whose value the gateway acts
# on. Two of one name are refused, not guessed at: the SDK reads the first of a name, the gateway's context
# the last, a proxy in front perhaps either (two session ids were answered on one session and logged under
# the other's identity, so replayed from its lane; two Hosts or Origins pass one check and mean the other).
_SINGLE_HEADERS = {
    b"host": "Host",
    b"origin": "Origin",
    b"authorization": "Authorization",
    b"api-key": "api-key",
    b"content-type": "Content-Type",
    b"mcp-session-id": "Mcp-Session-Id",
    b"mcp-protocol-version": "MCP-Protocol-Version",
    b"x-run-id": "X-Run-Id",
}


def _duplicated_header_or_run(scope: Any) -> tuple[int, int, str] | None:
    """A header of `_SINGLE_HEADERS`, or the query's `run`, given more than once, or a run named twice, as
    `?run=` and as `X-Run-Id`, differently: refused, naming them (which the client meant is not guessed)."""
    query = scope.get("query_string", b"")
    headers = scope.get("headers", ())
    if b"run=" in query:
        runs = parse_qs(query.decode("latin-1"), keep_blank_values=True).get("run", ())
        if len(runs) > 1:
            return 400, -32600, f"{len(runs)} run parameters in the query: send exactly one"
        header = next((value.decode("latin-1") for name, value in headers if name.lower() == b"x-run-id"), "")
        if runs and runs[0] and header and header != runs[0]:
            return (
                400,
                -32600,
                (f"two runs named: ?run={runs[0]} and X-Run-Id: {header}: name one (or the same in both)"),
            )
    seen: set[bytes] = set()
    for name, _ in headers:
        name = name.lower()
        if name in _SINGLE_HEADERS:
            if name in seen:
                count = sum(1 for other, _ in headers if other.lower() == name)
                return 400, -32600, f"{count} {_SINGLE_HEADERS[name]} headers: send exactly one"
            seen.add(name)
    return None


class HttpGuard:
    def __init__(self, app: Any, policy: GuardPolicy) -> None:
        self.app = app
        self.policy = policy
        self.refused: dict[str, int] = {}  # reason -> count, shown by /status

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] in self.policy.open_paths:
            await self.app(scope, receive, send)
            return
        headers = context_of(scope).headers  # decoded once for the whole request
        refusal = _duplicated_header_or_run(scope) or self._check_caller(headers, scope["path"])
        if refusal is not None:
            path = scope["path"]  # each front's clients are refused in the shape they parse
            await self._refuse(
                send,
                *refusal,
                envelope=path in self.policy.envelope_paths,
                openai=self.policy.takes_model_requests(path) or path == "/v1/models",
            )
            return
        if scope["method"] == "POST" and self.policy.takes_model_requests(scope["path"]):
            await self._model_request(scope, receive, send, headers)
            return
        if scope["method"] != "POST" or not self.policy.takes_messages(scope["path"]):
            if scope["method"] == "POST":  # REST bodies (/v1, /openai, mcprouter's API): the same cap and deadline
                envelope = scope["path"] in self.policy.envelope_paths
                declared = headers.get("content-length", "")
                if declared.isdigit() and int(declared) > self.policy.max_body:
                    await self._refuse(
                        send,
                        413,
                        -32600,
                        f"request body of {declared} bytes is over the {self.policy.max_body}-byte limit",
                        close=True,
                        envelope=envelope,
                        drain=receive,
                    )
                    return
                body, problem = await self._read_body(receive)
                if problem is not None:
                    await self._refuse(
                        send, *problem, close=True, envelope=envelope, drain=_drain_on_413(problem, receive)
                    )
                    return
                # Parsed here, strictly, once, for every REST route (their handlers read `posted_json`, never the bytes)
                value, why = parse_json(body) if body.strip() else (None, None)
                if why is not None:
                    json_type = headers.get("content-type", "").split(";")[0].strip().lower() == "application/json"
                    await self._refuse(
                        send,
                        *(
                            (400, -32700, f"request body is not JSON (RFC 8259): {why}")
                            if json_type
                            else (415, -32600, "Unsupported Media Type: Content-Type must be application/json")
                        ),
                        envelope=envelope,
                    )
                    return
                context_of(scope).message = value
                receive = replay_body(body, receive)
            await self.app(scope, receive, send)
            return
        problem = self._message_head(headers)
        if problem is not None:
            await self._refuse(send, *problem, close=problem[0] == 413, drain=_drain_on_413(problem, receive))
            return
        body, problem = await self._read_body(receive)
        if problem is not None:
            await self._refuse(send, *problem, close=True, drain=_drain_on_413(problem, receive))
            return
        message, problem = parse_message(body)
        if problem is not None:
            await self._refuse(send, *problem)
            return
        context_of(scope).message = message
        if body.startswith(BOM):  # accepted here (as over stdio): the SDK's own parser is handed what we parsed
            body = body[len(BOM) :]
        await answer_if_stopped(self.app, scope, replay_body(body, receive), send, message)

    def admits_head(self, scope: Any, headers: dict[str, str]) -> bool:
        """Would the guard let a whole MCP POST with this head (path, headers, declared length) through as it is?
        The hot lane's question (gateway.endpoints.hot_lane), with `admits_body`; it leaves every refusal to this layer's
        own answer. The same for a repeated head (gateway.http.repeat_head)."""
        if not self.policy.takes_messages(scope["path"]) or scope["path"] in self.policy.open_paths:
            return False
        return not (
            _duplicated_header_or_run(scope)
            or self._check_caller(headers, scope["path"])
            or self._message_head(headers)
        )

    def hot_head(self, head: HotHead) -> bool:
        return self.admits_head({"path": head.path, "query_string": head.query, "headers": head.headers}, head.decoded)

    def hot_body(self, head: HotHead, body: bytes, message: Any) -> Any:
        """The body parsed as this layer parses it; its JSON-RPC shape the hot lane's end (the fast path) checks as
        strictly (`admits_json`)."""
        value = self.admits_json(body)
        return DECLINED if value is REFUSED else value

    def admits_body(self, body: bytes) -> Any:
        """The parsed message of a body under a head `admits_head` lets through, else `REFUSED`."""
        if len(body) > self.policy.max_body:
            return REFUSED
        message, problem = parse_message(body)
        return REFUSED if problem is not None else message

    def admits_json(self, body: bytes) -> Any:
        """`admits_body` but for the message's shape (jsonrpc, id, method, params), which the caller checks as strictly
        (the hot lane: the fast path's own checks ask all the shape asks); else `REFUSED`."""
        if len(body) > self.policy.max_body:
            return REFUSED
        value, problem = parse_json(body)
        return REFUSED if problem is not None else value

    def _message_head(self, headers: dict[str, str]) -> tuple[int, int, str] | None:
        """What the head of an MCP POST must say: JSON, and a declared length under the cap."""
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            return 415, -32600, "Unsupported Media Type: Content-Type must be application/json"
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.policy.max_body:
            return 413, -32600, f"request body of {declared} bytes is over the {self.policy.max_body}-byte limit"
        return None

    def _check_caller(self, headers: dict[str, str], path: str = "") -> tuple[int, int, str] | None:
        host = _host_name(headers.get("host", ""))
        if host not in self.policy.allowed_hosts:
            return 421, -32600, f"Host {host or '(none)'!r} is not allowed (allow it with --allow-host)"
        origin = headers.get("origin")
        if origin is not None and _origin_host(origin) not in self.policy.allowed_hosts:
            return 403, -32600, f"Origin {origin!r} is not allowed (allow its host with --allow-host)"
        token = self.policy.token
        if token is not None:
            given = headers.get("authorization", "")
            scheme, _, value = given.partition(" ")
            if path.startswith("/openai/") and not given:  # Azure OpenAI clients send their key as `api-key`
                scheme, value = "bearer", headers.get("api-key", "")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
                return 401, -32001, "missing or wrong bearer token (Authorization: Bearer <token>)"
        return None

    async def _model_request(self, scope: Any, receive: Any, send: Any, headers: dict[str, str]) -> None:
        """A model request's body: the same checks as a message's, under the model's limits, refused
        the way OpenAI-compatible clients read errors."""
        limit = self.policy.model_max_body
        declared = headers.get("content-length", "")
        problem: tuple[int, int, str] | None = None
        if declared.isdigit() and int(declared) > limit:
            problem = (
                413,
                0,
                f"request body of {declared} bytes is over the {limit}-byte limit (--llm-max-body-bytes)",
            )
            body = b""
        else:
            body, problem = await self._read_body(receive, limit, self.policy.model_body_timeout)
        value = None
        if problem is None and body:
            value, why = parse_json(body)
            problem = None if why is None else (400, 0, f"request body is not JSON (RFC 8259): {why}")
        if problem is not None:
            self.refused[str(problem[0])] = self.refused.get(str(problem[0]), 0) + 1
            await send_openai_error(
                send, problem[0], problem[2], close=problem[0] != 400, drain=_drain_on_413(problem, receive)
            )
            return
        context_of(scope).message = value
        await answer_if_stopped(self.app, scope, replay_body(body, receive), send, None, model=True)

    async def _read_body(
        self, receive: Any, limit: int | None = None, timeout: float | None = None
    ) -> tuple[bytes, tuple[int, int, str] | None]:
        chunks: list[bytes] = []
        size = 0
        limit = self.policy.max_body if limit is None else limit
        timeout = self.policy.body_timeout if timeout is None else timeout
        with anyio.move_on_after(timeout) as deadline:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return b"", (400, -32600, "client disconnected before sending the whole body")
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    return b"", (413, -32600, f"request body over the {limit}-byte limit")
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks), None
        assert deadline.cancelled_caught
        return b"", (408, -32600, f"request body not received within {timeout:g} s")

    async def _refuse(
        self,
        send: Any,
        status: int,
        code: int,
        message: str,
        *,
        close: bool = False,
        envelope: bool = False,
        openai: bool = False,
        drain: Any = None,
    ) -> None:
        self.refused[str(status)] = self.refused.get(str(status), 0) + 1
        extra = [(b"www-authenticate", b"Bearer")] if status == 401 else None
        if openai:
            await send_openai_error(send, status, message, close=close, extra=extra, drain=drain)
            return
        if envelope:  # mcprouter's answer to a refused caller: code -2 (no auth) or -1
            body = {"code": -2 if status == 401 else -1, "message": message}
            await send_body(send, status, json.dumps(body).encode(), close=close, extra=extra, drain=drain)
            return
        await send_error(send, status, code, message, close=close, extra=extra, drain=drain)


def _drain_on_413(problem: tuple[int, int, str] | None, receive: Any) -> Any:
    """The receive to drain a refused body from: only a 413's (a 408's client is too slow to wait for, and a
    disconnected one has nothing left)."""
    return receive if problem is not None and problem[0] == 413 else None


def _origin_host(origin: str) -> str:
    _, sep, rest = origin.partition("://")
    return _host_name(rest.split("/")[0]) if sep else ""


def load_token(env_name: str | None, token_file: str | None) -> str | None:
    """The bearer token from an environment variable or a file (first line); None when neither is given."""
    from mcpgw.gateway.errors.tree import GatewayError

    if env_name and token_file:
        raise GatewayError("give either --auth-token-env or --auth-token-file, not both")
    if env_name:
        token = os.environ.get(env_name, "").strip()
        if not token:
            raise GatewayError(f"--auth-token-env {env_name}: the environment variable is not set or empty")
    elif token_file:
        try:
            token = (
                Path(token_file).read_text(encoding="utf-8").strip().splitlines()[0].strip()
                if Path(token_file).stat().st_size
                else ""
            )
        except (OSError, UnicodeDecodeError, IndexError) as exc:
            raise GatewayError(f"--auth-token-file {token_file}: cannot read a token from it ({exc})") from None
        if not token:
            raise GatewayError(f"--auth-token-file {token_file}: the file holds no token")
    else:
        return None
    if len(token) < 16:
        raise GatewayError("the bearer token is too short: use at least 16 characters (e.g. `openssl rand -hex 32`)")
    return token


def check_exposure(host: str, token: str | None) -> None:
    """Binding beyond loopback without a token would hand every tool to the network: refuse."""
    from mcpgw.gateway.errors.tree import GatewayError

    if token is None and not is_loopback(host):
        raise GatewayError(
            f"--host {host} is reachable from other machines; require a bearer token with "
            "--auth-token-env VAR or --auth-token-file FILE (see README, Security)"
        )
