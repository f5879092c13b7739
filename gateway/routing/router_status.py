"""/status and `mcpgw servers`: each upstream's state, what it exposes, and the router's own counters."""

from __future__ import annotations

import collections
import time
from typing import Any

from mcpgw.gateway.routing.router_core import RouterCore
from mcpgw.gateway.specs.server_spec import ServerSpec
from mcpgw.gateway.upstreams.upstream import PerRunInstances


class StatusReport(RouterCore):
    def status(self) -> dict[str, Any]:
        servers = {}
        for name, upstream in self.upstreams.items():
            info = upstream.status.as_dict()
            info["exposed_tools"] = sum(1 for e in self.catalog.tools.values() if e.server == name)
            if isinstance(upstream, PerRunInstances):  # isolation: run
                info["run_instances"] = upstream.run_instances
            info["title"] = self.specs[name].title if name in self.specs else None
            spec = self.specs.get(name)
            if spec is not None:
                info["built_from"] = _built_from(spec)
                if "all_interfaces" in spec.flags and spec.command and self.settings.mode != "replay":
                    info["all_interfaces"] = True  # the command it runs listens on every interface, not loopback only
                if spec.hide_tools and upstream.catalog is not None:  # listed by the server, not served: counted apart
                    info["hidden_tools"] = sorted(
                        t.get("name") for t in upstream.catalog.tools if t.get("name") in spec.hide_tools
                    )
            problems = upstream.catalog.problems if upstream.catalog is not None else None
            if problems:  # optional lists the server refused: reported, not fatal
                info["list_problems"] = list(problems)
            servers[name] = info
        return {
            "servers": servers,
            "settled": self.settled,
            "tools": len(self.catalog.tools),
            "hidden_tools": sum(len(info.get("hidden_tools", ())) for info in servers.values()),
            "catalog_version": self.catalog.version,
            "problems": self.catalog.problems,
            "validate": self.settings.validate,
            "naming": self.naming.mode,  # as chosen: auto is bare in front of one server
            "separator": self.settings.separator,
            "mode": self.settings.mode,
            "recording": self.recording,
            **(self.call_log.describe() if self.call_log else {"cassette": None, "call_log": None}),
            "calls_served": self.calls_served,
            "own_work_us": _percentiles(self.own_work_s),
            "uptime_s": round(time.time() - self.started_at, 1),
        }


def _built_from(spec: ServerSpec) -> str:
    """Where the server's code comes from, for `mcpgw servers`."""
    if spec.source is not None:
        return f"source {spec.source.label}"
    pin = spec.pin
    if pin is not None and pin.package:
        return f"{pin.registry} {pin.package}@{pin.version}"
    return "command"


def _percentiles(samples: collections.deque[float]) -> dict[str, float] | None:
    if not samples:
        return None
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e6, 1)

    return {"p50": pick(0.50), "p99": pick(0.99), "n": len(ordered)}
