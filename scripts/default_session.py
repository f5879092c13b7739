"""The scripted session recorded into cassettes/default (data; the driver is record_default_cassette.py).

Every tool of profile `local` in servers.lock.yaml is called at least once with
hand-written, meaningful arguments. A tool that shows up in tools/list but is
neither written here nor in SKIP gets arguments generated from its inputSchema
(`arguments_from_schema`), so a newer server version still gets exercised.

Paths are the ones the lock entries fix: the filesystem server may only touch
/tmp/mcpgw-fs; the memory server keeps its graph in the run's own state directory.
The session works in /tmp/mcpgw-fs/default-session/, which the driver rebuilds
before every recording (a workspace for the filesystem tools and a small git
repository for the git tools).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # loaded by path: find default_session_steps/ beside it
    sys.path.insert(0, str(HERE))

# The session lives in scripts/default_session_steps/ (one concept per module); its names stay importable from here.
from default_session_steps.calculator_calls import medical_calculator, numpy_mcp, unit_converter  # noqa: E402
from default_session_steps.everything_calls import everything, resources_and_prompts  # noqa: E402
from default_session_steps.schema_arguments import _example, _resolve, arguments_from_schema  # noqa: E402
from default_session_steps.scratch_world import (  # noqa: E402
    FS_ROOT,
    REPO,
    REPO_README,
    RUN_ID,
    SESSION_DIR,
    UNITS_PY,
    VITALS_CSV,
    WARD_NOTES,
    WORKSPACE,
    data_uri,
    tiny_png,
)
from default_session_steps.session_order import SKIP, hand_written, newcomer_guesses  # noqa: E402
from default_session_steps.step import Step, tool  # noqa: E402
from default_session_steps.time_thinking_memory_calls import memory, sequential_thinking, time_servers  # noqa: E402
from default_session_steps.workspace_calls import filesystem, git  # noqa: E402

__all__ = [
    "FS_ROOT",
    "REPO",
    "REPO_README",
    "RUN_ID",
    "SESSION_DIR",
    "SKIP",
    "UNITS_PY",
    "VITALS_CSV",
    "WARD_NOTES",
    "WORKSPACE",
    "Step",
    "_example",
    "_resolve",
    "arguments_from_schema",
    "data_uri",
    "everything",
    "filesystem",
    "git",
    "hand_written",
    "medical_calculator",
    "memory",
    "newcomer_guesses",
    "numpy_mcp",
    "resources_and_prompts",
    "sequential_thinking",
    "tiny_png",
    "time_servers",
    "tool",
    "unit_converter",
]
