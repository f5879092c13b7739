"""Who is calling and in which session: each request's context (run, client, path), its parameters,
in-flight ids, client identity, run ids in paths, the session table and its limits, and the one
adapter to the MCP SDK's private session internals. Below: routing and everything under it.

The face, what other rooms may import: client_identity, pipeline_verdicts, request_context, request_ids, request_params, run_paths, sdk_adapter, sessions.
"""

# Module names, not re-exports: importing the room imports none of them.
__all__ = [
    "client_identity",
    "pipeline_verdicts",
    "request_context",
    "request_ids",
    "request_params",
    "run_paths",
    "sdk_adapter",
    "sessions",
]
