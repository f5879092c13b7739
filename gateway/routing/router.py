"""The router: merges the upstreams' catalogs, routes each request to its server,
validates every tools/call inline and writes one call-log record per call.

It is protocol-era neutral and works on wire dicts; `gateway.mcp_server` adapts it
to the SDK's server and turns `GatewayError`s into JSON-RPC errors. It holds its
servers as `gateway.upstreams.upstream.Upstream`s and uses nothing else of them.

`Router` is assembled from one module per concept, each a mixin over `RouterCore`
(state, lifecycle, catalog, client notifications):
    gateway.routing.tool_calls     tools/call, inline validation, the call-log record
    gateway.routing.forwarding     prompts, resources, subscriptions, completion, logging
    gateway.routing.listing        the paged lists
    gateway.routing.router_status  /status
"""

from __future__ import annotations

from mcpgw.gateway.routing.forwarding import Forwarding
from mcpgw.gateway.routing.listing import Listing
from mcpgw.gateway.routing.router_core import Caller, CallSink, ClientHandle, RouterCore
from mcpgw.gateway.routing.router_status import StatusReport
from mcpgw.gateway.routing.tool_calls import ToolCalls

__all__ = ["CallSink", "Caller", "ClientHandle", "Router", "RouterCore"]


class Router(ToolCalls, Forwarding, Listing, StatusReport):
    """One gateway's router: every request a front serves, over the upstreams it was given."""
