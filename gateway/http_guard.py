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
   refusal is a JSON-RPC error with a 4xx status, never a 500.

The parsed message is left in the scope (`mcpgw.message`) so later layers need
not parse the body again.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

MAX_DEPTH = 64  # JSON nesting allowed in a request; tool arguments need far less
PARSED = "mcpgw.message"  # scope key: the request's parsed JSON body
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


@dataclass
class GuardPolicy:
    allowed_hosts: set[str] = field(default_factory=set)  # lower-case host names, without port
    token: str | None = None
    max_body: int = 4 * 1024 * 1024
    body_timeout: float = 30.0  # seconds to receive a whole request body
    mcp_path: str = "/mcp"
    open_paths: tuple[str, ...] = ("/healthz", "/readyz")  # probes (a load balancer's, k8s') carry no token; they say only up/ready
    message_paths: tuple[str, ...] = ("/sse/messages",)  # other paths whose POSTs are JSON-RPC messages (gateway.sse)
    # REST routes whose clients read mcprouter's envelope {"code", "message"} (gateway.router_api), not JSON-RPC
    envelope_paths: tuple[str, ...] = ()

    def takes_messages(self, path: str) -> bool:
        """Paths whose POSTs are JSON-RPC messages: /mcp and the SSE message URL (per-server endpoints reach
        the guard already rewritten to these by gateway.per_server.ServerPaths)."""
        return path == self.mcp_path or path in self.message_paths


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback address (`127.1`, `::1`, `localhost` ...)."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


def default_allowed_hosts(bind_host: str, extra: list[str] | None = None) -> set[str]:
    """Loopback names always; the bound host when it is a name or an address a client can use."""
    hosts = set(_LOOPBACK_NAMES)
    if bind_host not in ("0.0.0.0", "::", ""):
        hosts.add(_bracket(bind_host.lower()))
    hosts.update(_bracket(h.strip().lower()) for h in (extra or []) if h.strip())
    return hosts


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _host_name(value: str) -> str:
    """`example.com:8765` -> `example.com`; `[::1]:80` -> `[::1]`."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class HttpGuard:
    def __init__(self, app: Any, policy: GuardPolicy) -> None:
        self.app = app
        self.policy = policy
        self.refused: dict[str, int] = {}  # reason -> count, shown by /status

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] in self.policy.open_paths:
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        refusal = self._check_caller(headers, scope["path"])
        if refusal is not None:
            await self._refuse(send, *refusal, envelope=scope["path"] in self.policy.envelope_paths)
            return
        if scope["method"] != "POST" or not self.policy.takes_messages(scope["path"]):
            if scope["method"] == "POST":  # REST bodies (/v1, /openai, mcprouter's API): the same cap and deadline
                envelope = scope["path"] in self.policy.envelope_paths
                declared = headers.get("content-length", "")
                if declared.isdigit() and int(declared) > self.policy.max_body:
                    await self._refuse(send, 413, -32600, f"request body of {declared} bytes is over the "
                                       f"{self.policy.max_body}-byte limit", close=True, envelope=envelope)
                    return
                body, problem = await self._read_body(receive)
                if problem is not None:
                    await self._refuse(send, *problem, close=True, envelope=envelope)
                    return
                receive = replay_body(body, receive)
            await self.app(scope, receive, send)
            return
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            await self._refuse(send, 415, -32600, "Unsupported Media Type: Content-Type must be application/json")
            return
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.policy.max_body:
            await self._refuse(send, 413, -32600, f"request body of {declared} bytes is over the {self.policy.max_body}-byte limit",
                               close=True)
            return
        body, problem = await self._read_body(receive)
        if problem is not None:
            await self._refuse(send, *problem, close=True)
            return
        message, problem = parse_message(body)
        if problem is not None:
            await self._refuse(send, *problem)
            return
        scope[PARSED] = message
        await self.app(scope, replay_body(body, receive), send)

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

    async def _read_body(self, receive: Any) -> tuple[bytes, tuple[int, int, str] | None]:
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.policy.body_timeout) as deadline:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return b"", (400, -32600, "client disconnected before sending the whole body")
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.policy.max_body:
                    return b"", (413, -32600, f"request body over the {self.policy.max_body}-byte limit")
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks), None
        assert deadline.cancelled_caught
        return b"", (408, -32600, f"request body not received within {self.policy.body_timeout:g} s")

    async def _refuse(self, send: Any, status: int, code: int, message: str, *, close: bool = False,
                      envelope: bool = False) -> None:
        self.refused[str(status)] = self.refused.get(str(status), 0) + 1
        extra = [(b"www-authenticate", b"Bearer")] if status == 401 else None
        if envelope:  # mcprouter's answer to a refused caller: code -2 (no auth) or -1
            body = {"code": -2 if status == 401 else -1, "message": message}
            await send_body(send, status, json.dumps(body).encode(), close=close, extra=extra)
            return
        await send_error(send, status, code, message, close=close, extra=extra)


def replay_body(body: bytes, receive: Any) -> Any:
    """An ASGI receive that hands over `body` (read already) in one message, then the client's own
    receive, which reports its disconnect."""
    sent = False

    async def replay() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def send_error(send: Any, status: int, code: int, message: str, *, request_id: Any = None,
                     close: bool = False, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """A JSON-RPC error as a whole HTTP response."""
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}).encode()
    await send_body(send, status, body, close=close, extra=extra)


async def send_body(send: Any, status: int, body: bytes, *, close: bool = False,
                    extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """A JSON body as a whole HTTP response."""
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or [])]
    if close:  # the rest of an unread body would be taken for the next request
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _headers(scope: Any) -> dict[str, str]:
    # ASGI servers hand over header names lowercased already (the spec says so)
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _origin_host(origin: str) -> str:
    _, sep, rest = origin.partition("://")
    return _host_name(rest.split("/")[0]) if sep else ""


def parse_message(body: bytes) -> tuple[Any, tuple[int, int, str] | None]:
    """One JSON-RPC message, or why not: (HTTP status, JSON-RPC code, one line). Also used over stdio."""
    try:
        message = json.loads(body)
    except RecursionError:
        return None, (400, -32700, f"Parse error: JSON nested deeper than {MAX_DEPTH} levels")
    except (ValueError, UnicodeDecodeError) as exc:
        return None, (400, -32700, f"Parse error: {exc}")
    # Nesting needs a bracket per level: a body with few brackets (any usual request) needs no walk.
    if body.count(b"{") + body.count(b"[") > MAX_DEPTH and _depth_over(message, MAX_DEPTH):
        return None, (400, -32700, f"Parse error: JSON nested deeper than {MAX_DEPTH} levels")
    problem = _shape_problem(message)
    if problem is not None:
        return None, (400, problem[0], problem[1])
    return message, None


def _shape_problem(message: Any) -> tuple[int, str] | None:
    """Why `message` is not one JSON-RPC message, in one line (the SDK's answer would be a
    multi-line pydantic report under "Invalid params")."""
    if isinstance(message, list):
        return -32600, "Invalid Request: JSON-RPC batches are not supported; send one message per request"
    if not isinstance(message, dict):
        return -32600, f"Invalid Request: a JSON-RPC message is an object, not {type(message).__name__}"
    if message.get("jsonrpc") != "2.0":
        return -32600, f'Invalid Request: "jsonrpc" must be "2.0", not {json.dumps(message.get("jsonrpc"))[:40]}'
    if "id" in message and not valid_id(message["id"]) and ("method" in message or message["id"] is not None):
        return -32600, f"Invalid Request: id must be a string or an integer, not {json.dumps(message['id'])[:40]}"
    if "method" in message:
        if not isinstance(message["method"], str):
            return -32600, f'Invalid Request: "method" must be a string, not {json.dumps(message["method"])[:40]}'
        if message.get("params") is not None and not isinstance(message["params"], dict):
            return -32602, f'Invalid params: "params" must be an object, not {json.dumps(message["params"])[:40]}'
        return None
    if "id" in message and ("result" in message) != ("error" in message):
        return None  # the client's answer to a server request
    return -32600, 'Invalid Request: neither a request ("method") nor a response ("id" with "result" or "error")'


def valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _depth_over(value: Any, limit: int) -> bool:
    """Iterative, so a deep value cannot exhaust the interpreter's stack here."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def load_token(env_name: str | None, token_file: str | None) -> str | None:
    """The bearer token from an environment variable or a file (first line); None when neither is given."""
    from gateway.errors import GatewayError

    if env_name and token_file:
        raise GatewayError("give either --auth-token-env or --auth-token-file, not both")
    if env_name:
        token = os.environ.get(env_name, "").strip()
        if not token:
            raise GatewayError(f"--auth-token-env {env_name}: the environment variable is not set or empty")
    elif token_file:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip().splitlines()[0].strip() if Path(token_file).stat().st_size else ""
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
    from gateway.errors import GatewayError

    if token is None and not is_loopback(host):
        raise GatewayError(f"--host {host} is reachable from other machines; require a bearer token with "
                           "--auth-token-env VAR or --auth-token-file FILE (see README, Security)")
