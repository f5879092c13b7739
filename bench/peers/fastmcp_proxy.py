"""Peer: FastMCP's proxy of one stdio server, streamable HTTP with JSON answers.
Runs in its own environment (bench/compare_peers.py makes it). Usage: fastmcp_proxy.py PORT CMD ARGS..."""

import functools
import sys

import anyio
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy

port, command = int(sys.argv[1]), sys.argv[2:]
proxy = create_proxy(StdioTransport(command=command[0], args=command[1:]), name="fastmcp-proxy")
anyio.run(
    functools.partial(
        proxy.run_http_async,
        show_banner=False,
        host="127.0.0.1",
        port=port,
        path="/mcp",
        json_response=True,
        log_level="warning",
    )
)
