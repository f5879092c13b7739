"""The lock file's commands: import server lists, install packages, lock and check catalogs.

    mcpgw lock import FILE [--lock L] [--profile P] [--base-dir D]
    mcpgw lock refresh [--config L] [--profile P] [--servers ID ...] [--timeout S]
    mcpgw lock check   [--config L] [--profile P] [--servers ID ...] [--timeout S] [--json]
    mcpgw servers install [--config L] [--profile P] [--servers ID ...] [--jobs N] [--timeout S] [--sources DIR]

Modules, one concept each: `importer` (foreign server lists -> entries),
`lockedit` (text edits that keep comments), `launchers` (npx / uvx command
lines), `install` (cache warming and builds, concurrently), `direct` (starting
an installed npx / uvx package without its runner), `sources` (a repository
at a commit: found, verified, extracted once), `recipes` (build recipes and
where builds live), `build` (one source build, verified by listing its
tools), `probe` (start servers, read catalogs),
`locked` (the `locked:` section), `refresh`, `check`, and `schema_diff` (the
breaking / compatible classification, also used by `mcpgw drift`).
"""

DEFAULT_LOCK = "servers.lock.yaml"
