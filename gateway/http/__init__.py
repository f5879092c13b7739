"""HTTP plumbing under the endpoints: uvicorn's protocol for the hot lane (the one adapter to its
internals), request heads and their limits, timeouts, repeated heads, write coalescing, batched
commits, workers (connection hand-off, routing), and answering requests cut off by shutdown.
Below: sessions and everything under it.

The face, what other rooms may import: commit_batch, connection_handoff, hot_protocol, http_head_limits, http_timeouts, repeat_head, stopping, worker_routing, write_coalescing.
"""

# Module names, not re-exports: importing the room imports none of them.
__all__ = [
    "commit_batch",
    "connection_handoff",
    "hot_protocol",
    "http_head_limits",
    "http_timeouts",
    "repeat_head",
    "stopping",
    "worker_routing",
    "write_coalescing",
]
