"""The lock file's commands: import server lists, install packages, lock and check catalogs.

    mcpgw lock import FILE [--lock L] [--profile P] [--base-dir D]
    mcpgw lock refresh [--config L] [--profile P] [--servers ID ...] [--timeout S]
    mcpgw lock check   [--config L] [--profile P] [--servers ID ...] [--timeout S] [--json]
    mcpgw servers install [--config L] [--profile P] [--servers ID ...] [--jobs N] [--timeout S] [--sources DIR]

A feature package on top of the core: it imports gateway/, and the core never
imports it. What the gateway itself needs to start a server lives in the core:
reading the lock (`gateway.config`, with `gateway.recipe_syntax`), where
installs and builds are and how an installed entry starts
(`gateway.installed`), and the breaking / compatible classification of
catalog changes (`gateway.schema_diff`, also used by `mcpgw drift`).

Modules, one concept each: `importer` (foreign server lists -> entries),
`lockedit` (text edits that keep comments), `launchers` (npx / uvx command
lines), `install` (cache warming and builds, concurrently), `direct` (finding
the command inside an installed npx / uvx environment), `sources` (a
repository at a commit: found, verified, extracted once), `recipes` (the
steps of each build recipe), `build` (one source build, verified by listing
its tools), `processes` (one install step's process), `probe` (start servers,
read catalogs), `locked` (the `locked:` section), `refresh` and `check`.
"""

DEFAULT_LOCK = "servers.lock.yaml"
