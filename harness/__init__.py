"""What benchmark harnesses and MCP clients read to reach the gateway (`mcpgw connect`)."""
