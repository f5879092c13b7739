"""The servers behind the gateway: the `Upstream` interface, live upstreams started over stdio or
HTTP (launching, environment, deadlines), per-run isolation, what an upstream reports on its own (`events`),
and what a start asks of the installs (`installs`, answered from outside the core). Below: tools, specs, commandline, runtime, encoding, errors.

The face, what other rooms may import: child_env, events, factory, installs, isolation, live, stdio_transport, upstream.
"""

# Module names, not re-exports: importing the room imports none of them.
__all__ = ["child_env", "events", "factory", "installs", "isolation", "live", "stdio_transport", "upstream"]
