"""Calls to filesystem and git, on the scratch workspace and repository the recorder rebuilds."""

from __future__ import annotations

from .scratch_world import REPO, UNITS_PY, VITALS_CSV, WARD_NOTES, WORKSPACE
from .step import Step, tool


def filesystem() -> list[Step]:
    p = "filesystem__"
    notes, vitals = f"{WORKSPACE}/notes.md", f"{WORKSPACE}/vitals.csv"
    return [
        tool(p + "list_allowed_directories"),
        tool(p + "create_directory", path=f"{WORKSPACE}/reports"),
        tool(p + "write_file", path=vitals, content=VITALS_CSV),
        tool(p + "write_file", path=notes, content=WARD_NOTES),
        tool(p + "read_text_file", path=notes),
        tool(p + "read_text_file", path=vitals, head=2),
        tool(p + "read_file", path=vitals, tail=1),
        tool(p + "read_multiple_files", paths=[notes, vitals]),
        tool(
            p + "edit_file", path=notes, edits=[{"oldText": "recheck in 4 h", "newText": "recheck in 2 h"}], dryRun=True
        ),
        tool(p + "edit_file", path=notes, edits=[{"oldText": "recheck in 4 h", "newText": "recheck in 2 h"}]),
        tool(p + "read_media_file", path=f"{WORKSPACE}/chart.png"),
        tool(p + "get_file_info", path=vitals),
        tool(p + "list_directory", path=WORKSPACE),
        tool(p + "list_directory_with_sizes", path=WORKSPACE, sortBy="size"),
        tool(p + "move_file", source=notes, destination=f"{WORKSPACE}/reports/ward-round.md"),
        tool(p + "search_files", path=WORKSPACE, pattern="**/*.md"),
        tool(p + "directory_tree", path=WORKSPACE),
    ]


def git() -> list[Step]:
    """The git tools on the scratch repository; its files are changed through the filesystem server."""
    p = "git__"
    return [
        tool(p + "git_status", repo_path=REPO),
        tool(p + "git_log", repo_path=REPO, max_count=5),
        tool("filesystem__write_file", path=f"{REPO}/units.py", content=UNITS_PY),
        tool(
            "filesystem__edit_file",
            path=f"{REPO}/README.md",
            edits=[
                {
                    "oldText": "Small helpers for bedside calculations.",
                    "newText": "Small helpers for bedside calculations.\n\n- `units.py`: pounds to kilograms, Fahrenheit to Celsius",
                },
            ],
        ),
        tool(p + "git_status", repo_path=REPO),
        tool(p + "git_diff_unstaged", repo_path=REPO),
        tool(p + "git_add", repo_path=REPO, files=["README.md", "units.py"]),
        tool(p + "git_diff_staged", repo_path=REPO),
        tool(p + "git_reset", repo_path=REPO),
        tool(p + "git_add", repo_path=REPO, files=["README.md", "units.py"]),
        tool(p + "git_commit", repo_path=REPO, message="Add unit conversion helpers"),
        tool(p + "git_log", repo_path=REPO, max_count=5),
        tool(p + "git_show", repo_path=REPO, revision="HEAD"),
        tool(p + "git_create_branch", repo_path=REPO, branch_name="feature/batch-doses", base_branch="main"),
        tool(p + "git_checkout", repo_path=REPO, branch_name="feature/batch-doses"),
        tool(p + "git_branch", repo_path=REPO, branch_type="local"),
        tool(p + "git_diff", repo_path=REPO, target="HEAD~1"),
    ]
