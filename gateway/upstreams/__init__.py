"""The servers behind the gateway: the `Upstream` interface, live upstreams started over stdio or
HTTP (launching, environment, deadlines), per-run isolation, and where installs are found.
Below: tools, specs, basics.

The face, what other rooms may import: child_env, factory, installed, isolation, live, stdio_transport, upstream.
"""

# Module names, not re-exports: importing the room imports none of them.
__all__ = ["child_env", "factory", "installed", "isolation", "live", "stdio_transport", "upstream"]
