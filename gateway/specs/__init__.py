"""What the core is given: a server's `ServerSpec` (the lock file's format is read in `mcpgw.lock`;
the core knows no file format), the gateway's `Settings`, drift's ignore rules, the modes (`Mode`, `OnMiss`,
`PastEnd`), and an entry as a cassette stores it. Below: commandline, runtime, encoding, errors.

The face, what other rooms may import: ignore_rules, modes, server_spec, settings, spec_record.
"""

# Module names, not re-exports: importing the room imports none of them.
__all__ = ["ignore_rules", "modes", "server_spec", "settings", "spec_record"]
