"""Baseline (b): the proxy a user could write in an hour with the SDK.

One long-lived ClientSession to the upstream over stdio; a low-level Server
that forwards tools/list and tools/call; streamable HTTP with JSON responses.
No validation, no call log, no supervision. Usage: naive_proxy.py PORT CMD ARGS...
"""

import sys

import anyio
import uvicorn
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.lowlevel.server import Server


async def main(port: int, command: list[str]) -> None:
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as upstream:
        await upstream.initialize()

        async def list_tools(ctx, params):
            return await upstream.list_tools()

        async def call_tool(ctx, params):
            return await upstream.call_tool(params.name, params.arguments or {})

        server = Server("naive-proxy", on_list_tools=list_tools, on_call_tool=call_tool)
        app = server.streamable_http_app(json_response=True)
        await uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")).serve()


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]), sys.argv[2:])
