"""mcpgw: one MCP endpoint in front of many MCP servers."""

__version__ = "0.1.0"
