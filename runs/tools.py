"""The agent's tools: an MCP client session to the gateway's `/mcp`, tagged with
the task's run id (`?run=`), offering the tools of the task's servers.

The gateway's `/status` says which server each exposed name belongs to (server
ids, titles, naming separator), so tools are chosen by the benchmark's server
names (MCP-Bench "Unit Converter" = the lock entry's title)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import mcp_types as types


@dataclass
class ServerNames:
    """Which gateway server an exposed tool name belongs to, and that server's benchmark name."""

    titles: dict[str, str]  # server id -> display title (the id when the lock gives none)
    separator: str = "__"
    naming: str = "prefix"

    @classmethod
    def from_status(cls, status: dict[str, Any]) -> ServerNames:
        titles = {sid: info.get("title") or sid for sid, info in status.get("servers", {}).items()}
        return cls(titles, status.get("separator") or "__", status.get("naming") or "prefix")

    def server_of(self, exposed: str) -> str | None:
        if self.naming == "bare" and len(self.titles) == 1:  # a gateway in front of one server: its own names
            return next(iter(self.titles))
        for sid, title in sorted(self.titles.items(), key=lambda item: -len(item[0])):
            if exposed.startswith(sid + self.separator) or exposed.startswith(title + ":"):
                return sid
        return None

    def matching(self, wanted: set[str]) -> set[str]:
        """Server ids whose id or title is among the benchmark's names (case and spacing ignored)."""
        norm = {_norm(w) for w in wanted}
        return {sid for sid, title in self.titles.items() if _norm(sid) in norm or _norm(title) in norm}


def _norm(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def openai_tool(tool: dict[str, Any]) -> dict[str, Any]:
    schema = tool.get("inputSchema") or {"type": "object", "properties": {}}
    return {
        "type": "function",
        "function": {"name": tool["name"], "description": (tool.get("description") or "")[:1024], "parameters": schema},
    }


def observation(result: types.CallToolResult) -> str:
    """What the agent reads back: the text content (else structured content, else the raw content)."""
    parts = []
    for item in result.content or ():
        text = getattr(item, "text", None)
        parts.append(text if text is not None else json.dumps(item.model_dump(mode="json", exclude_none=True)))
    text = "\n".join(parts)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True)
    return ("Error: " + text) if result.is_error else text


def mcp_url(base: str, run_id: str) -> str:
    return f"{base.rstrip('/')}/mcp?run={quote(run_id, safe='')}"


class TaskTools:
    """One task's tools: listed once, called through one MCP session."""

    def __init__(self, client: Any, tools: list[dict[str, Any]]) -> None:
        self.client = client
        self.tools = tools
        self.names = {t["name"] for t in tools}
        self.calls = 0

    def specs(self) -> list[dict[str, Any]]:
        return [openai_tool(t) for t in self.tools]

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        """The observation for one call; failures are observations too (the agent reads them)."""
        from mcp.shared.exceptions import MCPError

        self.calls += 1
        try:
            result = await self.client.call_tool(name, arguments)
        except MCPError as exc:
            return f"Error: {exc}"
        return observation(result)
