"""The scratch world the session works in: a fresh workspace and a small git repository."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import default_session as session


def prepare_world() -> None:
    """Fresh workspace and git repository under the filesystem root (the memory server needs
    nothing: its lock entry gives every run an empty graph of its own)."""
    Path(session.FS_ROOT).mkdir(parents=True, exist_ok=True)  # filesystem refuses to start without it
    shutil.rmtree(session.SESSION_DIR, ignore_errors=True)
    workspace, repo = Path(session.WORKSPACE), Path(session.REPO)
    workspace.mkdir(parents=True)
    repo.mkdir(parents=True)
    (workspace / "chart.png").write_bytes(session.tiny_png())
    (repo / "README.md").write_text(session.REPO_README)
    fixed = {
        "GIT_AUTHOR_NAME": "mcpgw recorder",
        "GIT_AUTHOR_EMAIL": "recorder@mcpgw.invalid",
        "GIT_COMMITTER_NAME": "mcpgw recorder",
        "GIT_COMMITTER_EMAIL": "recorder@mcpgw.invalid",
        "GIT_AUTHOR_DATE": "2026-01-05T09:00:00+00:00",
        "GIT_COMMITTER_DATE": "2026-01-05T09:00:00+00:00",
    }
    git_env = {**os.environ, **fixed}
    for command in (
        ["init", "-q", "-b", "main"],
        ["config", "user.name", "mcpgw recorder"],
        ["config", "user.email", "recorder@mcpgw.invalid"],
        ["config", "commit.gpgsign", "false"],
        ["add", "README.md"],
        ["commit", "-q", "-m", "Start dose-tools"],
    ):
        subprocess.run(["git", *command], cwd=repo, env=git_env, check=True, capture_output=True, timeout=30)
