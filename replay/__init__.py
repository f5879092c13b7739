"""Replay: answer MCP requests from cassettes, miss policies, drift checks."""
