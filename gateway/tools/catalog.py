"""Catalogs: what each upstream offers, and the merged view the front serves.

`ServerCatalog` is one server's lists exactly as it sent them. `Catalog` is the
merged, namespaced view, rebuilt (never mutated) whenever an upstream's lists
change, so a request always sees one consistent version. Validators are
compiled here, once per schema, not per call.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcpgw.gateway.specs.server_spec import ServerSpec
from mcpgw.gateway.tools.naming import NameCollision, NameTable, NamingPolicy, shared_names
from mcpgw.gateway.tools.validation import CompiledSchema, ValidatorCache

_LISTS = {
    "tools": ("tools/list", "tools", "tools"),
    "resources": ("resources/list", "resources", "resources"),
    "templates": ("resources/templates/list", "resourceTemplates", "resources"),
    "prompts": ("prompts/list", "prompts", "prompts"),
}
MAX_PAGES = 100
logger = logging.getLogger(__name__)


class _Requester(Protocol):
    async def send_raw_request(self, method: str, params: Any, opts: Any = None) -> dict[str, Any]: ...


@dataclass
class ServerCatalog:
    init: dict[str, Any]
    tools: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # optional lists the server failed to give

    @property
    def capabilities(self) -> dict[str, Any]:
        return self.init.get("capabilities") or {}

    def as_dict(self) -> dict[str, Any]:
        return {
            "init": self.init,
            "tools": self.tools,
            "resources": self.resources,
            "templates": self.templates,
            "prompts": self.prompts,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServerCatalog:
        return cls(
            data.get("init") or {},
            list(data.get("tools") or []),
            list(data.get("resources") or []),
            list(data.get("templates") or []),
            list(data.get("prompts") or []),
        )


async def fetch_catalog(server: str, requester: _Requester, init: dict[str, Any]) -> ServerCatalog:
    """Every list the server declares. Only tools/list must answer: a server that declares
    `resources` but refuses resources/templates/list (-32601) still serves its tools, and
    the refusal is kept in `problems` and logged."""
    from mcp.shared.exceptions import MCPError

    catalog = ServerCatalog(init)
    for kind in _LISTS:
        try:
            await refresh_list(catalog, requester, kind)
        except MCPError as exc:
            if kind == "tools":
                raise
            problem = f"{_LISTS[kind][0]} failed ({exc.code}: {exc.message}); serving no {kind}"
            catalog.problems.append(problem)
            logger.warning("server %s: %s", server, problem)
    return catalog


async def refresh_list(catalog: ServerCatalog, requester: _Requester, kind: str) -> None:
    method, key, capability = _LISTS[kind]
    if capability not in catalog.capabilities:
        return
    items: list[dict[str, Any]] = []
    cursor = None
    for _ in range(MAX_PAGES):
        result = await requester.send_raw_request(method, {"cursor": cursor} if cursor else None)
        items.extend(result.get(key) or [])
        cursor = result.get("nextCursor")
        if not cursor:
            break
    setattr(catalog, kind, items)


@dataclass(frozen=True, slots=True)
class ToolEntry:
    server: str
    name: str  # upstream name
    exposed: str
    tool: dict[str, Any]  # the definition as exposed (name replaced)
    input: CompiledSchema
    output: CompiledSchema | None

    @property
    def destructive(self) -> bool:
        annotations = self.tool.get("annotations") or {}
        return bool(annotations.get("destructiveHint")) and not annotations.get("readOnlyHint")


@dataclass
class Catalog:
    """The merged, namespaced view over every ready upstream."""

    tools: dict[str, ToolEntry] = field(default_factory=dict)
    prompts: dict[str, tuple[str, str, dict[str, Any]]] = field(default_factory=dict)  # exposed -> (server, name, def)
    resources: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    templates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    uri_owner: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # collisions and hidden tools, for /status
    version: int = 0
    _servers: dict[str, ServerView] = field(default_factory=dict, repr=False, compare=False)

    def tool_list(self) -> list[dict[str, Any]]:
        return [entry.tool for entry in self.tools.values()]

    def server_view(self, server: str) -> ServerView:
        """One server's part of the catalog under its own names (its per-server endpoint), made once."""
        view = self._servers.get(server)
        if view is None:
            view = self._servers[server] = ServerView(self, server)
        return view

    def near_tools(self, name: str, limit: int = 3) -> list[str]:
        """Closest exposed names; also matches a bare upstream name to its namespaced form."""
        bare = [e.exposed for e in self.tools.values() if e.name == name]
        close = difflib.get_close_matches(name, list(self.tools), n=limit, cutoff=0.5)
        by_suffix = difflib.get_close_matches(name, [e.name for e in self.tools.values()], n=limit, cutoff=0.6)
        suffixed = [e.exposed for e in self.tools.values() if e.name in by_suffix]
        return list(dict.fromkeys(bare + close + suffixed))[:limit]

    def resource_owner(self, uri: str) -> str | None:
        owner = self.uri_owner.get(uri)
        if owner is not None:
            return owner
        for server, template in self.templates:
            if _template_matches(template.get("uriTemplate", ""), uri):
                return server
        schemes = {s for s, r in self.resources if str(r.get("uri", "")).split(":", 1)[0] == uri.split(":", 1)[0]}
        schemes |= {
            s for s, t in self.templates if str(t.get("uriTemplate", "")).split(":", 1)[0] == uri.split(":", 1)[0]
        }
        return schemes.pop() if len(schemes) == 1 else None


class ServerView:
    """What a per-server endpoint serves: one server's tools and prompts under the names it gave them,
    its resources and templates. Entries are the merged catalog's own, so validation, keys and the call
    log are those of the same call through the namespaced endpoint."""

    def __init__(self, catalog: Catalog, server: str) -> None:
        self.server = server
        self.tools = {e.name: e for e in catalog.tools.values() if e.server == server}
        self.tool_list = [{**e.tool, "name": e.name} for e in self.tools.values()]
        self.prompts = {name: (s, name, {**d, "name": name}) for s, name, d in catalog.prompts.values() if s == server}
        self.resources = [r for s, r in catalog.resources if s == server]
        self.templates = [t for s, t in catalog.templates if s == server]

    def near_tools(self, name: str, limit: int = 3) -> list[str]:
        return difflib.get_close_matches(name, list(self.tools), n=limit, cutoff=0.5)


def build_catalog(
    servers: list[tuple[ServerSpec, ServerCatalog]],
    naming: NamingPolicy,
    validators: ValidatorCache,
    version: int,
) -> Catalog:
    catalog = Catalog(version=version)
    tool_names, prompt_names = NameTable(), NameTable()
    shared_tools, shared_prompts = _shared(servers, naming, catalog)
    for spec, server in servers:
        for tool in server.tools:
            name = tool.get("name")
            if not isinstance(name, str) or name in spec.hide_tools:
                continue
            exposed = naming.expose(spec.id, spec.display_name, name, shared=name in shared_tools)
            try:
                tool_names.add(exposed, spec.id, name)
            except NameCollision as exc:
                catalog.problems.append(str(exc))
                continue
            exposed_tool, repair = wire_safe_tool({**tool, "name": exposed})
            if repair:
                catalog.problems.append(f"{spec.id}:{name}: {repair}")
            output_schema = tool.get("outputSchema")
            catalog.tools[exposed] = ToolEntry(
                spec.id,
                name,
                exposed,
                exposed_tool,
                validators.compile(tool.get("inputSchema", {})),
                validators.compile(output_schema) if output_schema is not None else None,
            )
        for prompt in server.prompts:
            name = prompt.get("name")
            if not isinstance(name, str):
                continue
            exposed = naming.expose(spec.id, spec.display_name, name, shared=name in shared_prompts)
            try:
                prompt_names.add(exposed, spec.id, name)
            except NameCollision as exc:
                catalog.problems.append(f"prompt: {exc}")
                continue
            catalog.prompts[exposed] = (spec.id, name, {**prompt, "name": exposed})
        for resource in server.resources:
            uri = resource.get("uri")
            if isinstance(uri, str):
                if uri in catalog.uri_owner and catalog.uri_owner[uri] != spec.id:
                    catalog.problems.append(
                        f"resource {uri!r} is offered by both {catalog.uri_owner[uri]} and {spec.id}; {catalog.uri_owner[uri]} serves it"
                    )
                    continue
                catalog.uri_owner[uri] = spec.id
                catalog.resources.append((spec.id, resource))
        catalog.templates.extend((spec.id, t) for t in server.templates)
    return catalog


def _shared(
    servers: list[tuple[ServerSpec, ServerCatalog]], naming: NamingPolicy, catalog: Catalog
) -> tuple[set[str], set[str]]:
    """Bare naming: tool and prompt names more than one server offers (they get prefixed), reported."""
    if naming.mode != "bare":
        return set(), set()
    tools = shared_names(
        {
            spec.id: [
                tool for t in server.tools if isinstance(tool := t.get("name"), str) and tool not in spec.hide_tools
            ]
            for spec, server in servers
        }
    )
    prompts = shared_names(
        {
            spec.id: [prompt for p in server.prompts if isinstance(prompt := p.get("name"), str)]
            for spec, server in servers
        }
    )
    for kind, shared in (("tool", tools), ("prompt", prompts)):
        for name, owners in sorted(shared.items()):
            exposed = ", ".join(naming.expose(sid, sid, name, shared=True) for sid in owners)
            catalog.problems.append(
                f"--naming bare: {kind} {name!r} is offered by {' and '.join(owners)}; "
                f"exposed prefixed instead: {exposed}"
            )
    return set(tools), set(prompts)


def wire_safe_tool(tool: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A definition every protocol version's Tool shape accepts, and what had to change.

    Clients reject a whole tools/list over one bad entry, so a schema the wire
    forbids (no `type`, or a type other than "object") is repaired here, once.
    The gateway still validates calls against the original schema.
    """
    from mcp_types import methods

    problems = []
    for version in _WIRE_VERSIONS:
        try:
            methods.serialize_server_result("tools/list", version, _listing(tool))
        except Exception as exc:  # noqa: BLE001 - pydantic's error says what the wire refuses
            problems.append(str(exc).splitlines()[1] if "\n" in str(exc) else str(exc))
            break
    if not problems:
        return tool, None
    repaired = dict(tool)
    for key in ("inputSchema", "outputSchema"):
        schema = repaired.get(key)
        if key == "outputSchema" and schema is None:
            continue
        if not isinstance(schema, dict):
            repaired[key] = {"type": "object"}
        elif schema.get("type") != "object":
            repaired[key] = {**schema, "type": "object"} if "type" not in schema else {"type": "object"}
    try:
        for version in _WIRE_VERSIONS:
            methods.serialize_server_result("tools/list", version, _listing(repaired))
    except Exception as exc:  # noqa: BLE001
        minimal = {"name": tool["name"], "description": tool.get("description", ""), "inputSchema": {"type": "object"}}
        return minimal, f"definition not valid MCP ({exc.__class__.__name__}); exposed with name and description only"
    return repaired, f"schema not valid on the wire ({problems[0].strip()}); exposed with type 'object'"


_WIRE_VERSIONS = ("2025-11-25", "2026-07-28")


def _listing(tool: dict[str, Any]) -> dict[str, Any]:
    # The 2026-07-28 envelope fields the front adds; present so only the tool is judged.
    return {"tools": [tool], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}


def _template_matches(template: str, uri: str) -> bool:
    """A light RFC 6570 level-1 match: literal parts in order, `{var}` matches anything but '/'."""
    import re

    pattern = ""
    for literal, var in re.findall(r"([^{]*)(\{[^}]*\})?", template):
        pattern += re.escape(literal)
        if var:
            pattern += r"[^/]*" if not var.startswith(("{+", "{/", "{#")) else r".*"
    return re.fullmatch(pattern, uri) is not None
