"""A stdio MCP server (raw JSON-RPC) whose tools come from a JSON file. Test fixture only.

    python catalog_server.py TOOLS.json

TOOLS.json is `{"name": ..., "version": ..., "tools": [tool definitions]}` or a
bare list of tools. It is read at start, so a test can change the catalog
between two starts. `tools/call` answers with the tool's name and arguments.
"""

import json
import sys


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        data = json.load(f)
    if isinstance(data, list):
        data = {"tools": data}
    info = {"name": data.get("name", "catalog-server"), "version": data.get("version", "1.0")}
    tools = data.get("tools", [])
    names = {t["name"] for t in tools}
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, rid = message.get("method"), message.get("id")
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": info,
            }
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "tools/call":
            params = message.get("params") or {}
            if params.get("name") not in names:
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "error": {"code": -32602, "message": f"Unknown tool: {params.get('name')}"},
                    }
                )
                continue
            text = json.dumps({"tool": params.get("name"), "arguments": params.get("arguments") or {}}, sort_keys=True)
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        elif method == "ping":
            result = {}
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
            continue
        else:
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
