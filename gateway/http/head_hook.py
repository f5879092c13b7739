"""The hook the HTTP protocol's head checks share (gateway.http.http_timeouts, gateway.http.http_head_limits): `head_complete`."""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class HeadHook(HttpToolsProtocol):
    def head_complete(self) -> None:
        """A request's head is whole, and not handed to uvicorn (the hot lane holds the request: gateway.http.hot_protocol):
        what each head check does at `on_headers_complete`, without uvicorn's part. Each check extends it, calling on."""
