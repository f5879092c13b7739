"""Text edits of lock files: only the lines an edit owns change; the rest stays byte for byte."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from mcpgw.gateway.errors.tree import GatewayError
from mcpgw.lock.config import parse_config
from mcpgw.lock.lockedit import add_servers, add_to_profile, scalar, server_indent, set_entry_key

ROOT = Path(__file__).resolve().parents[2]
MCPBENCH = (ROOT / "servers.lock.yaml").read_text()

SMALL = """# a comment at the top
version: 1
servers:
  alpha:   # the first one
    command: python
    args: [a.py]

  beta:
    command: python
    notes: >-
      folded text
      over two lines

# trailing comment before profiles
profiles:
  one: [alpha]
  two:
    - alpha
    - beta
"""


def only_insertions(before: str, after: str) -> list[str]:
    """The lines `after` adds; fails if any line of `before` was changed or dropped."""
    added = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(
        a=before.splitlines(), b=after.splitlines(), autojunk=False
    ).get_opcodes():
        assert op in ("equal", "insert"), (op, before.splitlines()[i1:i2], after.splitlines()[j1:j2])
        if op == "insert":
            added += after.splitlines()[j1:j2]
    return added


def test_scalar_quotes_only_what_yaml_would_misread():
    assert scalar("alpha") == "alpha"
    assert scalar("yes") == '"yes"'
    assert scalar("1.5") == '"1.5"'
    assert scalar("a: b") == '"a: b"'
    assert scalar("null") == '"null"'


def test_add_servers_after_the_last_entry_keeps_everything_else():
    after = add_servers(SMALL, "  gamma:\n    command: node\n", "t.yaml")
    assert sorted(only_insertions(SMALL, after)) == sorted(["", "  gamma:", "    command: node"])
    assert "      over two lines\n\n  gamma:\n    command: node\n\n# trailing comment" in after
    assert list(parse_config(after, "t.yaml").servers) == ["alpha", "beta", "gamma"]


def test_add_to_existing_flow_and_block_profiles_and_new_ones():
    config = parse_config(SMALL, "t.yaml")
    flow = add_to_profile(SMALL, "one", ["beta"], config, "t.yaml")
    assert "  one: [alpha, beta]\n" in flow
    block = add_to_profile(SMALL, "two", ["alpha", "gamma"], config, "t.yaml")
    assert only_insertions(SMALL, block) == ["    - gamma"]
    new = add_to_profile(SMALL, "three", ["beta"], config, "t.yaml")
    assert only_insertions(SMALL, new) == ["  three: [beta]"]
    assert parse_config(new, "t.yaml").profiles["three"] == ("beta",)
    assert add_to_profile(SMALL, "one", ["alpha"], config, "t.yaml") == SMALL


def test_profiles_section_created_when_missing():
    text = "version: 1\nservers:\n  a:\n    command: x\n"
    after = add_to_profile(text, "yes", ["a"], parse_config(text, "t"), "t")
    assert after.endswith('\nprofiles:\n  "yes": [a]\n')
    assert parse_config(after, "t").profiles == {"yes": ("a",)}


def test_flow_style_profiles_rewritten_as_flow():
    text = "version: 1\nservers:\n  a:\n    command: x\n  b:\n    command: y\nprofiles: {p: [a]}  # mine\n"
    after = add_to_profile(text, "q", ["a", "b"], parse_config(text, "t"), "t")
    # Still one flow mapping on its line (the comment after it kept), not a block section.
    assert after == text.replace("{p: [a]}", "{p: [a], q: [a, b]}")
    assert parse_config(after, "t").profiles == {"p": ("a",), "q": ("a", "b")}
    grown = add_to_profile(after, "p", ["b"], parse_config(after, "t"), "t")
    assert grown == text.replace("{p: [a]}", "{p: [a, b], q: [a, b]}")


def test_set_entry_key_adds_then_replaces_in_place():
    def block(text):
        return lambda column: f"{' ' * column}locked:\n{' ' * (column + 2)}tool_count: {text}\n"

    added = set_entry_key(SMALL, "alpha", "locked", block(1), "t.yaml")
    assert only_insertions(SMALL, added) == ["    locked:", "      tool_count: 1"]
    replaced = set_entry_key(added, "alpha", "locked", block(2), "t.yaml")
    assert replaced == added.replace("tool_count: 1", "tool_count: 2")
    after_folded = set_entry_key(SMALL, "beta", "locked", block(3), "t.yaml")
    assert "      over two lines\n    locked:\n      tool_count: 3\n\n# trailing comment" in after_folded
    assert parse_config(after_folded, "t.yaml").servers["beta"].command == "python"


def test_set_entry_key_refuses_flow_style_entries():
    text = "version: 1\nservers:\n  a: {command: x}\n"
    with pytest.raises(GatewayError, match="flow style"):
        set_entry_key(text, "a", "locked", lambda c: "x\n", "t")


def test_edits_of_the_real_mcpbench_lock_keep_its_comments():
    config = parse_config(MCPBENCH, "servers.lock.yaml")
    assert server_indent(MCPBENCH, "m") == (2, 4)
    text = add_servers(MCPBENCH, "  # imported\n  extra:\n    command: python\n", "m")
    text = add_to_profile(text, "local", ["extra"], config, "m")
    text = add_to_profile(text, "mine", ["extra", "fetch"], config, "m")
    text = set_entry_key(text, "medical_calculator", "locked", lambda c: " " * c + "locked: {tool_count: 22}\n", "m")
    added = only_insertions(MCPBENCH, text)
    assert sorted(added) == sorted(
        [
            "",
            "  # imported",
            "  extra:",
            "    command: python",
            "    locked: {tool_count: 22}",
            "    - extra",
            "  mine: [extra, fetch]",
        ]
    )
    loaded = parse_config(text, "m")
    assert loaded.profiles["local"][-1] == "extra" and loaded.profiles["mine"] == ("extra", "fetch")
    assert list(loaded.servers)[-1] == "extra" and len(loaded.servers) == len(config.servers) + 1
