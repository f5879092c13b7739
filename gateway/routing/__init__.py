"""One MCP request to the right upstream: the router, tools/call with inline validation and the
call-log record, whole or paged lists, prompts/resources/completion forwarding, /status.
Below: upstreams, tools, specs, commandline, runtime, encoding, errors.

The face, what other rooms may import: router, tool_calls.
"""

# Module names, not re-exports: importing the room imports none of them.
__all__ = ["router", "tool_calls"]
