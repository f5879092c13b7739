"""A run id in the URL's path: `/runs/<id>/<route>` is `/<route>` tagged with run `<id>`.

Clients that append their own paths to a base URL cannot carry `?run=` (the query is lost) nor, often, a header
(the `openai` and `AzureOpenAI` clients a harness builds itself): MCP-Bench's runner reaches its model through an
`AzureOpenAI(azure_endpoint=...)` it makes, so its model requests were untagged. A base URL of
`http://host:port/runs/<id>` (Azure) or `.../runs/<id>/v1` (OpenAI, mcprouter's API) tags every request made
under it, with no code changed; `mcpgw connect --run <id>` prints them. A request that also names its run by `?run=`
or `X-Run-Id` must name the same one (gateway.sessions.run_ids: one reading of a run id everywhere).
"""

from __future__ import annotations

from urllib.parse import unquote

from mcpgw.gateway.sessions import run_ids

PREFIX = "/runs/"


def split_run(raw_path: str) -> tuple[str, str] | None:
    """`/runs/<id>/<route>`, as sent (percent-encoded: an id may hold an encoded `/`) -> (id, `/<route>` decoded);
    None for any other path, or an empty id (a 404 then: no route has it). An id that cannot be read (not UTF-8,
    too long, not printable, an untagged lane's shape) raises `run_ids.RunIdError` (a 400 saying why)."""
    if not raw_path.startswith(PREFIX):
        return None
    run, slash, rest = raw_path[len(PREFIX) :].partition("/")
    if not slash or not run:
        return None
    return run_ids.from_url(run, "the path"), "/" + unquote(rest)
