"""A run id in the URL's path: `/runs/<id>/<route>` is `/<route>` tagged with run `<id>`.

Clients that append their own paths to a base URL cannot carry `?run=` (the query is lost) nor, often, a header
(the `openai` and `AzureOpenAI` clients a harness builds itself): MCP-Bench's runner reaches its model through an
`AzureOpenAI(azure_endpoint=...)` it makes, so its model requests were untagged. A base URL of
`http://host:port/runs/<id>` (Azure) or `.../runs/<id>/v1` (OpenAI, mcprouter's API) tags every request made
under it, with no code changed; `mcpgw connect --run <id>` prints them. A run id in the path wins over `?run=` and
`X-Run-Id`.
"""

from __future__ import annotations

from urllib.parse import unquote

PREFIX = "/runs/"
MAX_RUN = 200


def split_run(raw_path: str) -> tuple[str, str] | None:
    """`/runs/<id>/<route>`, as sent (percent-encoded: an id may hold an encoded `/`) -> (id, `/<route>` decoded);
    None for any other path, or an id that is empty, too long or not printable (a 404 then: no route has it)."""
    if not raw_path.startswith(PREFIX):
        return None
    run, slash, rest = raw_path[len(PREFIX) :].partition("/")
    run = unquote(run)
    if not slash or not run or len(run) > MAX_RUN or not run.isprintable():
        return None
    return run, "/" + unquote(rest)
