"""The environment a server process gets (and its install or build, with `registry=True`).

Apart from gateway.upstreams.live so that everything that starts a server's process (live upstreams, HTTP
launches, installs, builds) shares it without importing the others."""

from __future__ import annotations

import os

from mcpgw.gateway.specs.server_spec import ServerSpec, expand_env

# What a child inherits from the gateway: the basics, plus the settings package
# runners need to reach a registry (certificates, proxies, caches, indexes). Other
# variables, other servers' API keys among them, are passed only when declared.
_INHERIT_NAMES = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TZ", "TMPDIR", "VIRTUAL_ENV"}
_INHERIT_PREFIXES = ("LC_", "SSL_", "PIP_", "UV_", "NPM_", "npm_", "NODE_", "XDG_", "CURL_CA", "REQUESTS_CA")
_INHERIT_SUFFIXES = ("_PROXY", "_proxy", "_CA_BUNDLE", "_CA_CERTS")


REGISTRY_OFF = {"npm_config_offline": "true", "UV_OFFLINE": "1"}  # npx and uvx: cached packages only


def child_env(spec: ServerSpec, *, registry: bool = False) -> dict[str, str]:
    """The environment a server (or, with `registry`, its install or build) gets. The `offline` flag says how
    an installed server starts: from the cache only. Installs and builds always reach the registries, or a
    machine with cold caches could never build what a warm one starts."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name in _INHERIT_NAMES or name.startswith(_INHERIT_PREFIXES) or name.endswith(_INHERIT_SUFFIXES)
    }
    if registry:
        for name in (*REGISTRY_OFF, "NPM_CONFIG_OFFLINE"):
            env.pop(name, None)
    elif spec.offline:  # from the cache only (`mcpgw servers install`): a run never fetches or upgrades a package
        env.update(REGISTRY_OFF)
    for name, template in spec.env_values.items():
        if name in spec.env_required and not os.environ.get(name):
            continue  # a key the user does not have stays unset, as MCP-Bench leaves it
        env[name] = expand_env(template)
    return env
