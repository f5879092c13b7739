#!/usr/bin/env python3
"""Record the embedded default cassette (cassettes/default) and prove it replays offline.

    . .venv/bin/activate && python scripts/record_default_cassette.py

1. Rebuilds the session's scratch world (/tmp/mcpgw-fs/default-session: a workspace and a
   small git repository; an empty memory graph), deletes cassettes/default, and starts
   `mcpgw serve --mode record --cassette default --config servers.lock.yaml --profile local`
   on a free loopback port. Every server must reach `ready`; the ones that do not are named.
2. Plays the scripted session of scripts/default_session.py through the SDK client
   (`?run=default-session`, handshake era): every exposed tool at least once, resources,
   templates, prompts and completions. Prints a table of outcomes.
3. Stops the gateway with SIGTERM, leaves only data.mdb in cassettes/default, then replays
   a copy with PATH=/nonexistent (nothing can be started) in both protocol eras and checks
   that every answer equals the recorded one.

Exit status 0 only when all of that holds. Needs npx and uvx with the lock's packages
fetchable (or cached); takes about a minute.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The recorder lives in scripts/default_cassette/ (one concept per module); its names stay importable from here.
from default_cassette.cassette_files import cassette_summary, sha256, tidy_cassette  # noqa: E402
from default_cassette.comparing import compare, era_view, first_difference  # noqa: E402
from default_cassette.gateway_process import (  # noqa: E402
    Gateway,
    free_port,
    require_ready,
    start_gateway,
    stop_gateway,
    wait_settled,
)
from default_cassette.outcome_table import check_environment_answer, outcome, preview, print_table  # noqa: E402
from default_cassette.planning import newcomer_reads, plan_session  # noqa: E402
from default_cassette.playing import _all, _request, dump, play  # noqa: E402
from default_cassette.recording import record  # noqa: E402
from default_cassette.scratch_world import prepare_world  # noqa: E402
from default_cassette.settings import (  # noqa: E402
    CASSETTE,
    CASSETTES,
    CONFIG,
    PROFILE,
    PYTHON,
    ROOT,
    SECRET_NAMES,
    STEP_TIMEOUT,
    VENV_BIN,
    Failure,
)
from default_cassette.verifying import verify  # noqa: E402

__all__ = [
    "CASSETTE",
    "CASSETTES",
    "CONFIG",
    "PROFILE",
    "PYTHON",
    "ROOT",
    "SECRET_NAMES",
    "STEP_TIMEOUT",
    "VENV_BIN",
    "Failure",
    "Gateway",
    "_all",
    "_request",
    "cassette_summary",
    "check_environment_answer",
    "compare",
    "dump",
    "era_view",
    "first_difference",
    "free_port",
    "main",
    "newcomer_reads",
    "outcome",
    "plan_session",
    "play",
    "prepare_world",
    "preview",
    "print_table",
    "record",
    "require_ready",
    "sha256",
    "start_gateway",
    "stop_gateway",
    "tidy_cassette",
    "verify",
    "wait_settled",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep-work", action="store_true", help="keep the temporary folder with gateway logs")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mcpgw-default-cassette-"))
    try:
        steps, recorded, live_status, newcomer = record(work)
        for note in tidy_cassette():
            print(note)
        problems = verify(work, steps, recorded, live_status, newcomer)
        summary = cassette_summary()
        size = (CASSETTE / "data.mdb").stat().st_size
        print(
            f"\ncassette {CASSETTE.relative_to(ROOT)}: {len(summary['servers'])} servers, {summary['tools']} tools, "
            f"exchanges {summary['exchanges']}, {summary['calls']} call records, data.mdb {size / 1024:.0f} KiB"
        )
        if problems:
            print(f"\nREPLAY CHECK FAILED ({len(problems)} problem(s)):")
            for problem in problems:
                print("  " + problem)
            return 1
        print(
            f"replay check: all {len(recorded)} answers equal the recorded ones, in both protocol eras, "
            f"with PATH=/nonexistent and no server process started"
        )
        return 0
    except Failure as exc:
        print(f"\nFAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep_work:
            print(f"work folder (logs): {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
