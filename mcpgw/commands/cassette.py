"""`mcpgw cassette ls|show|export|merge|prune|rm`."""

from __future__ import annotations

from typing import Any

from mcpgw.cassette.paths import add_dir_option
from mcpgw.commands import lazy, usage
from mcpgw.recorder.commands import CASSETTE_HELP, SHIPPED


def register(sub: Any) -> None:
    cassette = sub.add_parser("cassette", help="list, inspect, export, merge, prune and remove cassettes")
    add_dir_option(cassette)
    actions = cassette.add_subparsers(metavar="action")
    ls = actions.add_parser("ls", help="every cassette, with counts, and its replay logs under it")
    ls.add_argument("--runs", type=int, default=3, metavar="N", help="replay logs listed per cassette (default 3)")
    ls.set_defaults(func=lazy("mcpgw.recorder.commands", "cmd_ls"))
    show = actions.add_parser("show", help="one cassette: servers, tools, calls, per-replay fidelity, freshness")
    show.add_argument("name", help=CASSETTE_HELP)
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=lazy("mcpgw.recorder.commands", "cmd_show"))
    export = actions.add_parser("export", help="catalogs, exchanges and calls as JSONL")
    export.add_argument("name", help=CASSETTE_HELP)
    export.add_argument("--format", choices=("jsonl",), default="jsonl")
    export.add_argument("-o", "--output")
    export.set_defaults(func=lazy("mcpgw.recorder.commands", "cmd_export"))
    merge = actions.add_parser("merge", help="merge two cassettes into a new one (b's recordings after a's)")
    merge.add_argument("a", help=CASSETTE_HELP)
    merge.add_argument("b", help=CASSETTE_HELP)
    merge.add_argument("-o", "--output", required=True, help="name of the new cassette")
    merge.set_defaults(func=lazy("mcpgw.recorder.commands", "cmd_merge"))
    prune = actions.add_parser("prune", help="remove old replay logs (the recordings stay)")
    prune.add_argument("names", nargs="*", metavar="name", help="cassettes whose logs to prune (default: all)")
    prune.add_argument("--keep", type=int, metavar="N", help="keep the newest N replay logs of each cassette")
    prune.add_argument("--older-than", metavar="AGE", help="remove replay logs older than AGE: 30m, 12h, 7d")
    prune.add_argument("--dry-run", action="store_true", help="say what would go, remove nothing")
    prune.set_defaults(func=lazy("mcpgw.recorder.commands", "cmd_prune"))
    rm = actions.add_parser("rm", help="remove a cassette, with its replay logs")
    rm.add_argument("name", help=CASSETTE_HELP)
    rm.add_argument("--force", action="store_true", help=f"needed to remove the shipped cassette {SHIPPED!r}")
    rm.set_defaults(func=lazy("mcpgw.recorder.commands", "cmd_rm"))
    for action in (ls, show, export, merge, prune, rm):
        add_dir_option(action, inherited=True)
    cassette.set_defaults(func=usage(cassette))
