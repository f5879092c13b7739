"""The HTTP endpoints and their pipeline: the app, the guard (token, Host/Origin, strict bodies),
/mcp with its transport, the hot lane and fast path, per-server endpoints, SSE, and mcprouter's
API. Below: http, stdio, sessions and everything under them.

The face, what other rooms may import: fast_path, hot_lane, http_app, http_guard, per_server.
"""

# Module names, not re-exports: importing the room imports none of them.
__all__ = ["fast_path", "hot_lane", "http_app", "http_guard", "per_server"]
