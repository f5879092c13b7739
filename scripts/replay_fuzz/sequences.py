"""Random sequences of filesystem tool calls over one to three lanes (the fuzzer's S)."""

from __future__ import annotations

import random

P = "filesystem__"
FILES = ["a.txt", "b.txt", "d/c.txt", "d/a.txt", "e/f.txt"]
DIRS = ["d", "e", "d/sub"]
CONTENTS = ["alpha\n", "beta\n", "alpha\nbeta\n", "", "gamma"]
PATTERNS = ["*.txt", "**/*.txt", "a*", "c.txt"]

# lanes: (kind, name). kind: "hdr" tagged by X-Run-Id, "qry" tagged by ?run=, "anon" untagged
LANE_KINDS = [("hdr", "A"), ("qry", "B"), ("anon", "U"), ("anon", "V")]
MODERN_LANE = (
    "m26",
    "M",
)  # an untagged 2026-07-28 client (cookie identity); opt-in (--modern) to keep old seeds stable


def rand_call(rng: random.Random) -> tuple[str, dict]:
    f = lambda: rng.choice(FILES)  # noqa: E731
    k = rng.random()
    if k < 0.22:
        return "write_file", {"path": f(), "content": rng.choice(CONTENTS)}
    if k < 0.40:
        return rng.choice(["read_text_file", "read_text_file", "read_file"]), {"path": f()}
    if k < 0.44:
        return "read_text_file", {"path": f(), rng.choice(["head", "tail"]): rng.choice([1, 2])}
    if k < 0.48:
        return "read_multiple_files", {"paths": rng.sample(FILES, 2)}
    if k < 0.55:
        return "create_directory", {"path": rng.choice(DIRS)}
    if k < 0.63:
        return "list_directory", {"path": rng.choice(DIRS + ["."])}
    if k < 0.66:
        return "list_directory_with_sizes", {"path": rng.choice(DIRS + ["."])}
    if k < 0.70:
        return "directory_tree", {"path": "."}
    if k < 0.78:
        src = rng.choice(FILES + DIRS[:2])
        return "move_file", {"source": src, "destination": rng.choice(FILES + ["e", "d/sub/m.txt"])}
    if k < 0.87:
        old = rng.choice(["alpha", "beta", "gamma", "zzz"])
        args = {"path": f(), "edits": [{"oldText": old, "newText": rng.choice(["ALPHA", "beta", "x"])}]}
        if rng.random() < 0.3:
            args["dryRun"] = True
        return "edit_file", args
    if k < 0.93:
        return "get_file_info", {"path": rng.choice(FILES + DIRS)}
    return "search_files", {"path": ".", "pattern": rng.choice(PATTERNS)}


def gen_sequence(rng: random.Random, modern: bool = False) -> dict:
    kinds = LANE_KINDS + [MODERN_LANE] if modern else LANE_KINDS
    nlanes = 1 if rng.random() < 0.5 else rng.choice([2, 2, 3])
    lanes = [kinds[0]] if nlanes == 1 and rng.random() < 0.6 else rng.sample(kinds, nlanes)
    steps = []
    for _ in range(rng.randint(4, 14)):
        lane = rng.randrange(len(lanes))
        if rng.random() < 0.05:
            steps.append(["reopen", lane])
        else:
            tool, args = rand_call(rng)
            steps.append(["call", lane, tool, args])
    # which URL each lane uses: the gateway's /mcp (prefixed names) or /servers/filesystem/mcp (bare names)
    endpoints = ["server" if rng.random() < 0.25 else "mcp" for _ in lanes]
    return {"lanes": lanes, "steps": steps, "endpoints": endpoints}
