"""A small Python MCP server with one tool, `echo`, for benchmarks: over stdio, or with
`--http PORT` answering streamable HTTP itself in JSON (the SDK's own floor, no proxy)."""

import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server


async def list_tools(ctx, params):
    schema = {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}
    return types.ListToolsResult(tools=[types.Tool(name="echo", description="Echoes the message", input_schema=schema)])


async def call_tool(ctx, params):
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"Echo: {(params.arguments or {}).get('message')}")]
    )


server = Server("bench-echo", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        import uvicorn

        app = server.streamable_http_app(json_response=True)
        await uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")).serve()
        return
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
