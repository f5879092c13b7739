"""The live model endpoint: one pooled HTTP client towards `--llm-base-url`.

The API key comes from an environment variable, read once at start, and goes
only into the Authorization header of forwarded requests: never into the
cassette (the recorder also redacts its value from anything stored).
Transport failures are not answers: they become a 502 and are not recorded.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import httpcore
import httpx

from mcpgw.llm.answer import DONE, ModelAnswer


class ModelUnreachable(Exception):
    """The model endpoint could not be reached or broke off mid-answer."""


# httpcore's own failures (httpx wraps these same ones as httpx.HTTPError)
_TRANSPORT_ERRORS = (
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.ProxyError,
    httpcore.UnsupportedProtocol,
    httpcore.ConnectionNotAvailable,
    OSError,
)


class LiveModel:
    def __init__(
        self, base_url: str, api_key: str | None, timeout: float = 600.0, max_answer_bytes: int = 64 * 1024 * 1024
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.max_answer_bytes = max_answer_bytes  # read no further: a larger answer is refused, not held
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=10.0),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=32),
        )
        # Plain exchanges go through httpx's own connection pool (httpcore) directly: httpx's request and
        # response models cost about 0.6 ms a request here, most of what the passthrough adds (measured).
        # Only without a proxy for this endpoint in the environment: httpx honours those, httpcore does not.
        self._pool = (
            None
            if _proxied(self.base_url)
            else httpcore.AsyncConnectionPool(
                ssl_context=httpx.create_ssl_context(), max_connections=64, max_keepalive_connections=32
            )
        )
        self._headers = [(b"content-type", b"application/json"), (b"accept", b"application/json")]
        if api_key:
            self._headers.append((b"authorization", f"Bearer {api_key}".encode()))
        self._timeouts = {"connect": 10.0, "read": timeout, "write": timeout, "pool": timeout}

    async def send(self, method: str, path: str, body: bytes | None, traceparent: str | None = None) -> ModelAnswer:
        """A plain (non-streamed) exchange; `body` is the client's JSON request, forwarded as sent. `traceparent`:
        the exchange's span when traces are exported, sent on as the W3C header."""
        if self._pool is None:
            return await self._send_httpx(method, path, body, traceparent)
        headers = self._headers if traceparent is None else [*self._headers, (b"traceparent", traceparent.encode())]
        try:
            async with self._pool.stream(
                method.encode(),
                (self.base_url + path).encode(),
                headers=headers,
                content=body,
                extensions={"timeout": self._timeouts},
            ) as response:
                raw = await self._capped(response.aiter_stream())
        except _TRANSPORT_ERRORS as exc:
            raise ModelUnreachable(f"model endpoint {self.base_url} unreachable: {type(exc).__name__}: {exc}") from None
        content_type = next((v.decode("latin-1") for k, v in response.headers if k.lower() == b"content-type"), "")
        return _plain(response.status, raw, content_type)

    async def _capped(self, chunks: AsyncIterator[bytes]) -> bytes:
        parts: list[bytes] = []
        size = 0
        async for chunk in chunks:
            size += len(chunk)
            if size > self.max_answer_bytes:
                raise ModelUnreachable(
                    f"model endpoint {self.base_url} answered more than {self.max_answer_bytes} bytes "
                    "(--llm-max-answer-bytes): not relayed"
                )
            parts.append(chunk)
        return b"".join(parts)

    async def _send_httpx(
        self, method: str, path: str, body: bytes | None, traceparent: str | None = None
    ) -> ModelAnswer:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if traceparent is not None:
            headers["traceparent"] = traceparent
        try:
            async with self._client.stream(method, path, content=body, headers=headers) as response:
                raw = await self._capped(response.aiter_bytes())
        except httpx.HTTPError as exc:
            raise ModelUnreachable(f"model endpoint {self.base_url} unreachable: {type(exc).__name__}: {exc}") from None
        return _plain(response.status_code, raw, response.headers.get("content-type", ""))

    async def stream(
        self, path: str, body: dict[str, Any], traceparent: str | None = None
    ) -> tuple[ModelAnswer, AsyncGenerator[str, None] | None]:
        """Open a streamed exchange: (answer so far, event iterator). An endpoint that
        answers without a stream (an error, typically) gives a plain answer and no iterator."""
        request = self._client.build_request(
            "POST", path, json=body, headers={"traceparent": traceparent} if traceparent is not None else None
        )
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise ModelUnreachable(f"model endpoint {self.base_url} unreachable: {type(exc).__name__}: {exc}") from None
        content_type = response.headers.get("content-type", "")
        if response.status_code >= 400 or "text/event-stream" not in content_type:
            try:
                raw = await self._capped(response.aiter_bytes())
            finally:
                await response.aclose()
            return _plain(response.status_code, raw, content_type), None
        return (
            ModelAnswer(response.status_code, events=[], content_type="text/event-stream"),
            _events(response, self.base_url, self.max_answer_bytes),
        )

    async def aclose(self) -> None:
        await self._client.aclose()
        if self._pool is not None:
            await self._pool.aclose()


async def _events(response: httpx.Response, where: str, limit: int) -> AsyncGenerator[str, None]:
    """The `data:` payloads of an SSE stream, up to (not including) [DONE]; cut past `limit` bytes in all."""
    size = 0
    try:
        async for line in response.aiter_lines():
            size += len(line) + 1
            if size > limit:
                raise ModelUnreachable(
                    f"model endpoint {where} streamed more than {limit} bytes (--llm-max-answer-bytes)"
                )
            if not line.startswith("data:"):
                continue  # comments, event names, blank separators
            data = line[5:].lstrip(" ")
            if data == DONE:
                return
            yield data
    except httpx.HTTPError as exc:
        raise ModelUnreachable(f"model endpoint {where} broke off its stream: {type(exc).__name__}: {exc}") from None
    finally:
        await response.aclose()


def _plain(status: int, raw: bytes, content_type: str) -> ModelAnswer:
    try:
        body: Any = json.loads(raw) if raw else None
    except ValueError:
        body = raw.decode("utf-8", "replace")  # a proxy's HTML error page, kept as text
        return ModelAnswer(status, body=body, content_type="text/plain")
    return ModelAnswer(status, body=body, content_type="application/json", raw=raw if raw else None)


def _proxied(url: str) -> bool:
    """Whether the environment routes `url` through a proxy (HTTP(S)_PROXY / ALL_PROXY, minus NO_PROXY)."""
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0]
    proxies = urllib.request.getproxies()
    if not (proxies.get(scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(host.rsplit(":", 1)[0] if host.count(":") == 1 else host)
