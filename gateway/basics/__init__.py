"""Small shared pieces every room may use: the gateway's errors and HTTP refusals, JSON text and
messages, msgpack, result digests, secrets, deadlines, the console, running a coroutine at once,
and reading a running gateway's /status. Imports nothing else of the gateway.

The face, what other rooms may import: console, deadlines, eager, errors, http_errors, json_messages, json_text, msgpack_packer, result_digest, secrets, stable_results, status_client.
"""

# Module names, not re-exports: importing the room imports none of them.
__all__ = ["console", "deadlines", "eager", "errors", "http_errors", "json_messages", "json_text", "msgpack_packer", "result_digest", "secrets", "stable_results", "status_client"]
