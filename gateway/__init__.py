"""mcpgw's core: one MCP endpoint in front of many MCP servers.

Rooms, each importing only the rooms above it in this list (tests/test_layering.py checks it):

    errors      the gateway's error tree and the HTTP layers' own answers
    encoding    strict JSON-RPC, JSON text, msgpack, result digests and their memo
    runtime     a call's deadline, running a coroutine at once, secrets kept out of what is shown
    commandline consoles for tables, reading a running gateway's /status
    specs       what the core is given: ServerSpec, Settings (the lock file is read in mcpgw.lock)
    tools       the catalog, tool names, schemas and inline validation
    upstreams   the servers behind the gateway: live (stdio, HTTP), isolation, installs
    routing     one request to the right upstream: tools/call, lists, forwarding, /status
    sessions    request context, client identity, in-flight ids, the session table, the SDK adapter
    stdio       the gateway over stdio
    http        HTTP plumbing: uvicorn's protocol, heads, limits, workers, shutdown
    endpoints   /mcp, the hot lane, per-server endpoints, SSE, mcprouter's API, the guard

`mcp_server` (this folder) puts them together: the gateway as an MCP server over HTTP and stdio.
"""

from importlib.metadata import PackageNotFoundError, version

try:  # the version is written once, in pyproject.toml; an installed mcpgw knows it from its metadata
    __version__ = version("mcpgw")
except PackageNotFoundError:  # sources imported without being installed
    __version__ = "0+unknown"
