"""What the hot lane asks each layer of the declared pipeline, and the request head it shows them.

Most layers of the pipeline (gateway.endpoints.pipeline, the lists in gateway.endpoints.http_app) let most
requests through untouched. The hot lane (gateway.endpoints.hot_lane) answers an initialized session's hot
requests without running the pipeline, so it asks every layer of the lists, in their order, whether it would
let this request through untouched, and takes the request only when each says yes:

- `hot_head(head) -> bool`: a pure function of the request's head (`HotHead`: path, query, headers, the
  session they name), asked once per head (a head repeated on a connection keeps its verdict:
  gateway.http.repeat_head). A layer that changes what the layers behind it see (the per-server path) does
  so on `head`, as it does on the request's scope;
- `hot_body(head, body, message) -> message | DECLINED`, only for a layer whose verdict needs the body or
  state that changes per request (a session still open, an id in flight): `message` is the body as the
  layers before parsed it (None until one did), returned as it is or parsed, or `DECLINED`.

A layer that has no `hot_head` keeps the lane shut: a new layer is asked before a request may skip it.
"""

from __future__ import annotations

from typing import Any


class _Declined:
    __slots__ = ()

    def __repr__(self) -> str:
        return "DECLINED"


DECLINED: Any = _Declined()  # a body verdict: this layer would not let the request through untouched


class HotHead:
    """A request's head as the layers see it in the pipeline (the scope's path, query and headers)."""

    __slots__ = ("path", "raw_path", "query", "headers", "decoded", "session_id", "modern", "server", "endpoint")

    def __init__(
        self,
        path: str,
        raw_path: bytes,
        query: bytes,
        headers: list[tuple[bytes, bytes]],
        decoded: dict[str, str],
        session_id: str | None,
        modern: bool,
    ) -> None:
        self.path = path  # as the layers behind a rewriting one see it
        self.raw_path = raw_path
        self.query = query
        self.headers = headers  # raw, names lowercased
        self.decoded = decoded  # as gateway.sessions.request_context decodes them
        self.session_id = session_id
        self.modern = modern
        self.server: str | None = None  # a per-server endpoint's server (gateway.endpoints.per_server.ServerPaths)
        self.endpoint: str | None = None  # and the path as the client called it


def verdicts(layers: list[Any]) -> tuple[list[Any], list[Any]] | None:
    """The layers' head verdicts and body verdicts, in the list's order; None when a layer gives none."""
    heads, bodies = [], []
    for layer in layers:
        head = getattr(layer, "hot_head", None)
        if head is None:
            return None
        heads.append(head)
        body = getattr(layer, "hot_body", None)
        if body is not None:
            bodies.append(body)
    return heads, bodies
