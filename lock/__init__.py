"""The lock file's commands: import server lists, install packages, lock and check catalogs.

    mcpgw lock import FILE [--lock L] [--profile P] [--base-dir D]
    mcpgw lock refresh [--config L] [--profile P] [--servers ID ...] [--timeout S]
    mcpgw lock check   [--config L] [--profile P] [--servers ID ...] [--timeout S] [--json]
    mcpgw servers install [--config L] [--profile P] [--servers ID ...] [--jobs N] [--timeout S] [--sources DIR]

A feature package on top of the core: it imports gateway/, and the core never
imports it. The lock file's format lives here: `config` reads `servers.lock.yaml`
or an `mcpServers` JSON (`lock_format`, `mcp_servers_json`, `config_fields`,
`recipe_syntax`) into the `ServerSpec`s the core is given; the composition root
(mcpgw/) reads it and hands the specs on, with where installs and builds are and
how an installed entry starts (`installed`: the core asks through its
`gateway.upstreams.installs.Installs`). The breaking / compatible classification
of catalog changes stays in the core (`gateway.tools.schema_diff`).

Modules, one concept each: `importer` (foreign server lists -> entries),
`lockedit` (text edits that keep comments), `launchers` (npx / uvx command
lines), `installed` (where installs are, read at every start), `install`
(cache warming and builds, concurrently), `direct` (finding the command
inside an installed npx / uvx environment), `sources` (a
repository at a commit: found, verified, extracted once), `recipes` (the
steps of each build recipe), `build` (one source build, verified by listing
its tools), `processes` (one install step's process), `probe` (start servers,
read catalogs), `locked` (the `locked:` section), `refresh` and `check`.
"""

DEFAULT_LOCK = "servers.lock.yaml"
