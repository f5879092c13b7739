"""The paged lists a client reads: tools, prompts, resources and resource templates.

All of them, under their exposed names, or (`scope`: a per-server endpoint) one server's under its own.
Each list is one page, the whole of it, unless `--page-size N` asks for pages of N: many real clients read only
the first page of `tools/list` and never follow `nextCursor`, and a client that silently misses tools would offer
its model fewer tools than the benchmark says. The cursor is an offset into the list.
"""

from __future__ import annotations

from typing import Any

from mcpgw.gateway.errors.tree import UnknownTargetError
from mcpgw.gateway.routing.router_core import RouterCore


class Listing(RouterCore):
    def list_tools(self, cursor: str | None, scope: str | None = None) -> dict[str, Any]:
        """All tools under their exposed names, or (`scope`: a per-server endpoint) one server's under its own."""
        tools = self.catalog.tool_list() if scope is None else self.catalog.server_view(scope).tool_list
        return _page("tools", tools, cursor, self.settings.page_size)

    def list_prompts(self, cursor: str | None, scope: str | None = None) -> dict[str, Any]:
        prompts = self.catalog.prompts if scope is None else self.catalog.server_view(scope).prompts
        return _page("prompts", [p[2] for p in prompts.values()], cursor, self.settings.page_size)

    def list_resources(self, cursor: str | None, scope: str | None = None) -> dict[str, Any]:
        items = [r for _, r in self.catalog.resources] if scope is None else self.catalog.server_view(scope).resources
        return _page("resources", items, cursor, self.settings.page_size)

    def list_resource_templates(self, cursor: str | None, scope: str | None = None) -> dict[str, Any]:
        items = [t for _, t in self.catalog.templates] if scope is None else self.catalog.server_view(scope).templates
        return _page("resourceTemplates", items, cursor, self.settings.page_size)


def _page(key: str, items: list[Any], cursor: str | None, size: int) -> dict[str, Any]:
    """One page of `items` from `cursor`; `size` 0 (the default) is the whole list."""
    start = _cursor_offset(cursor, len(items))
    if size <= 0:
        return {key: items[start:] if start else items}
    result: dict[str, Any] = {key: items[start : start + size]}
    if start + size < len(items):
        result["nextCursor"] = str(start + size)
    return result


def _cursor_offset(cursor: str | None, total: int) -> int:
    if not cursor:
        return 0
    try:
        offset = int(cursor)
    except ValueError:
        raise UnknownTargetError(f"invalid cursor {cursor!r}") from None
    if not 0 <= offset <= total:
        raise UnknownTargetError(f"invalid cursor {cursor!r}")
    return offset
