"""Prompts, resources, completion and logging: each request finds its server and is forwarded as it came.

Prompts are renamed as tools are (the catalog maps exposed -> upstream name); resource URIs are not.
"""

from __future__ import annotations

import logging
from typing import Any

from mcpgw.gateway.errors.tree import GatewayError, UnknownTargetError
from mcpgw.gateway.routing.router_core import Caller, ClientHandle, RouterCore, strip_meta

logger = logging.getLogger("mcpgw.gateway.routing.router")


class Forwarding(RouterCore):
    def _prompt_target(self, name: Any, scope: str | None) -> tuple[str, str]:
        prompts = self.catalog.prompts if scope is None else self.catalog.server_view(scope).prompts
        target = prompts.get(name) if isinstance(name, str) else None
        sole = self._sole_server()
        if target is None and isinstance(name, str) and sole is not None and scope is None:
            target = (sole, name, {})
        if target is None:
            raise UnknownTargetError(f"Unknown prompt {name!r}; known: {sorted(prompts)[:20]}")
        return target[0], target[1]

    async def get_prompt(self, params: dict[str, Any], caller: Caller, scope: str | None = None) -> dict[str, Any]:
        server, upstream_name = await self.found(lambda: self._prompt_target(params.get("name"), scope))
        out = {**params, "name": upstream_name}
        strip_meta(out)
        return (await self.upstreams[server].request("prompts/get", out, self._options(server, caller))).result

    def _resource_server(self, uri: Any, scope: str | None = None) -> str:
        if scope is not None:  # a per-server endpoint reads its own server's resources (URIs are not renamed)
            return scope
        server = self.catalog.resource_owner(uri) if isinstance(uri, str) else None
        if server is None and isinstance(uri, str):
            server = self._sole_server()
        if server is None:
            raise UnknownTargetError(f"No server offers resource {uri!r}")
        return server

    async def read_resource(self, params: dict[str, Any], caller: Caller, scope: str | None = None) -> dict[str, Any]:
        server = await self.found(lambda: self._resource_server(params.get("uri"), scope))
        out = dict(params)
        strip_meta(out)
        return (await self.upstreams[server].request("resources/read", out, self._options(server, caller))).result

    async def subscribe(
        self, params: dict[str, Any], caller: Caller, handle: ClientHandle | None, on: bool, scope: str | None = None
    ) -> dict[str, Any]:
        uri: Any = params.get("uri")  # as the client sent it (a per-server endpoint does not look at it)
        server = await self.found(lambda: self._resource_server(uri, scope))
        out = dict(params)
        strip_meta(out)
        reply = await self.upstreams[server].request(
            "resources/subscribe" if on else "resources/unsubscribe", out, self._options(server, caller)
        )
        if handle is not None:
            (handle.subscriptions.add if on else handle.subscriptions.discard)(uri)
        return reply.result

    async def complete(self, params: dict[str, Any], caller: Caller, scope: str | None = None) -> dict[str, Any]:
        ref = params.get("ref") or {}
        out = dict(params)
        strip_meta(out)
        server, ref_name = await self.found(lambda: self._completion_target(ref, scope))
        if ref_name is not None:
            out["ref"] = {**ref, "name": ref_name}
        return (await self.upstreams[server].request("completion/complete", out, self._options(server, caller))).result

    def _completion_target(self, ref: dict[str, Any], scope: str | None) -> tuple[str, str | None]:
        """The server a completion goes to, and the upstream's name of the prompt it completes (if it does)."""
        if ref.get("type") == "ref/prompt":
            prompts = self.catalog.prompts if scope is None else self.catalog.server_view(scope).prompts
            name: Any = ref.get("name")  # as the client sent it: a name not a string is unknown
            target = prompts.get(name)
            if target is None:
                raise UnknownTargetError(f"Unknown prompt {name!r}")
            return target[0], target[1]
        uri = ref.get("uri")
        return scope or next(
            (s for s, t in self.catalog.templates if t.get("uriTemplate") == uri), None
        ) or self._resource_server(uri), None

    async def set_logging_level(self, params: dict[str, Any]) -> dict[str, Any]:
        """Forward to every ready upstream that offers logging; one failure does not stop the rest."""
        out = dict(params)
        strip_meta(out)
        for name, upstream in self.upstreams.items():
            catalog = upstream.catalog
            if catalog is not None and "logging" in catalog.capabilities and upstream.status.state == "ready":
                try:
                    await upstream.request("logging/setLevel", out)
                except GatewayError as exc:
                    logger.info("logging/setLevel on %s: %s", name, exc.message)
        return {}
