"""The HTTP request pipeline, declared as lists of layers (as Starlette's `Middleware` list).

A request crosses the outer list (every route), then, on the MCP endpoint, the endpoint's list, then
the SDK's session manager with the gateway's transport (gateway.endpoints.transport). Each layer is one concern;
what they decide is carried in the request's context (gateway.sessions.request_context), never re-read from
headers. `assemble` wraps an app in a list, the first layer outermost. The hot lane takes a request past
the lists only when every layer says it would let it through untouched (gateway.sessions.pipeline_verdicts): a layer
added here reaches it with no edit there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Layer:
    cls: Any  # an ASGI app class taking the app it wraps first
    kwargs: dict[str, Any] = field(default_factory=dict)
    when: bool = True  # a layer some configurations leave out (--workers routing)

    @classmethod
    def of(cls, layer: Any, when: bool = True, **kwargs: Any) -> Layer:
        return cls(layer, kwargs, when)


def assemble(app: Any, layers: list[Layer]) -> tuple[Any, dict[Any, Any]]:
    """`app` wrapped in `layers` (the first outermost); also each layer's instance by class, in the list's order
    (for /status, and for the hot lane, which asks each one: gateway.sessions.pipeline_verdicts)."""
    built: dict[Any, Any] = {}
    for layer in reversed(layers):
        if layer.when:
            app = built[layer.cls] = layer.cls(app, **layer.kwargs)
    return app, dict(reversed(built.items()))
