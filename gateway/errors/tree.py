"""The gateway's error tree, in one place.

Every failure a person can act on is one of these. Foreign exceptions (SDK,
anyio, OS, lmdb) are mapped to them where they are caught; they become
JSON-RPC errors only at the front (`gateway.mcp_server`).

    GatewayError
    ├── ConfigError            a bad lock/config file: names file, line and problem
    ├── UnknownToolError       tools/call for a name the catalog lacks (suggests near names)
    ├── UnknownTargetError     a resource/prompt the catalog lacks
    └── UpstreamError          anything about one upstream server
        ├── UpstreamUnavailable   not running (never started, missing env, restarting)
        ├── UpstreamTimeout       no answer within the call's time limit
        ├── UpstreamCrashed       the connection died while the call was in flight
        ├── ResponseTooLarge      the answer exceeded the configured size limit, or nests deeper than JSON is read
        └── UpstreamRejected      the upstream answered with a JSON-RPC error (passed through)
    ReplayMiss                 replay has no recording for this request (names the nearest ones)
    └── ReplayDiverged         the run left the recording earlier on this server: answers would be another state's
    CassetteError              a cassette that is missing, corrupt or of another format
"""

from __future__ import annotations

from typing import Any

# JSON-RPC codes used at the front.
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
METHOD_NOT_FOUND = -32601
# Implementation-defined server errors live in -32000..-32099.
UPSTREAM_UNAVAILABLE = -32001
UPSTREAM_TIMEOUT = -32002
UPSTREAM_FAILED = -32003
RESPONSE_TOO_LARGE = -32004
REPLAY_MISS = -32005
GATEWAY_STOPPING = -32010  # the gateway is shutting down: the request was cut off (gateway/http/stopping.py)


class GatewayError(Exception):
    """Base of every error the gateway reports to a person or a client."""

    code: int = INTERNAL_ERROR
    # Where a failed answer came from, set by the upstream that knew it (gateway.upstreams.upstream.answered_by):
    # a recording's or cassette's label and key. None: the live server's error, or no server's.
    answer_source: str | None = None
    cassette_key: str | None = None

    def __init__(self, message: str, *, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class ConfigError(GatewayError):
    def __init__(self, source: str, line: int | None, problem: str) -> None:
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {problem}")
        self.source, self.line, self.problem = source, line, problem


class UnknownToolError(GatewayError):
    code = INVALID_PARAMS

    def __init__(self, name: str, suggestions: list[str]) -> None:
        hint = f"; did you mean {', '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        super().__init__(f"Unknown tool {name!r}{hint}", data={"tool": name, "suggestions": suggestions})
        self.name, self.suggestions = name, suggestions


class UnknownTargetError(GatewayError):
    code = INVALID_PARAMS


class UpstreamError(GatewayError):
    code = UPSTREAM_FAILED

    def __init__(self, server: str, message: str, *, data: Any = None) -> None:
        super().__init__(f"server {server!r}: {message}", data=data)
        self.server = server


class UpstreamUnavailable(UpstreamError):
    code = UPSTREAM_UNAVAILABLE


class UpstreamTimeout(UpstreamError):
    code = UPSTREAM_TIMEOUT


class UpstreamCrashed(UpstreamError):
    code = UPSTREAM_FAILED


class ResponseTooLarge(UpstreamError):
    code = RESPONSE_TOO_LARGE


class UpstreamRejected(UpstreamError):
    """The upstream answered with a JSON-RPC error; its code and data pass through."""

    def __init__(self, server: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(server, message, data=data)
        self.code = code
        # Pass the upstream's own message through unprefixed: it is its answer.
        self.message = message


class ReplayMiss(GatewayError):
    code = REPLAY_MISS


class ReplayDiverged(ReplayMiss):
    """The lane missed a state-changing call (or hybrid catch-up failed) on this server earlier:
    the recording no longer describes the state this run is in, so nothing more is answered from it."""


class CassetteError(GatewayError):
    pass
