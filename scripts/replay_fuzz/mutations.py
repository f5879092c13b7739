"""Mutating a sequence S into S': the operations a replayed run may differ from its recording by."""

from __future__ import annotations

import copy
import random

from .sequences import CONTENTS, DIRS, FILES, PATTERNS, rand_call


def mutate(seq: dict, rng: random.Random) -> tuple[dict, list[str]]:
    s = copy.deepcopy(seq)
    steps = s["steps"]
    done = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        op = rng.choice(
            [
                "drop",
                "insert",
                "swap",
                "change",
                "repeat",
                "cut",
                "copy_other",
                "move_lane",
                "reopen",
                "insert_read",
                "endpoint",
            ]
        )
        calls = [i for i, st in enumerate(steps) if st[0] == "call"]
        if op == "drop" and steps:
            i = rng.randrange(len(steps))
            steps.pop(i)
            done.append(f"drop {i}")
        elif op == "insert":
            i = rng.randint(0, len(steps))
            tool, args = rand_call(rng)
            steps.insert(i, ["call", rng.randrange(len(s["lanes"])), tool, args])
            done.append(f"insert {i}")
        elif op == "insert_read" and calls:
            # a read of a path the sequence uses, in some lane, anywhere
            i = rng.randint(0, len(steps))
            path = rng.choice(FILES)
            steps.insert(i, ["call", rng.randrange(len(s["lanes"])), "read_text_file", {"path": path}])
            done.append(f"insert_read {i}")
        elif op == "swap" and len(steps) >= 2:
            i = rng.randrange(len(steps) - 1)
            steps[i], steps[i + 1] = steps[i + 1], steps[i]
            done.append(f"swap {i}")
        elif op == "change" and calls:
            i = rng.choice(calls)
            tool, args = rand_call(rng)
            if rng.random() < 0.5 and steps[i][3]:  # same tool, one argument changed
                tool = steps[i][2]
                args = copy.deepcopy(steps[i][3])
                key = rng.choice(sorted(args))
                pool = {
                    "path": FILES + DIRS,
                    "content": CONTENTS,
                    "source": FILES,
                    "destination": FILES,
                    "pattern": PATTERNS,
                }.get(key)
                if pool:
                    args[key] = rng.choice(pool)
            steps[i] = ["call", steps[i][1], tool, args]
            done.append(f"change {i}")
        elif op == "repeat" and calls:
            i = rng.choice(calls)
            j = rng.randint(i + 1, len(steps))
            steps.insert(j, copy.deepcopy(steps[i]))
            done.append(f"repeat {i}->{j}")
        elif op == "cut" and len(steps) > 1:
            n = rng.randrange(1, len(steps))
            del steps[n:]
            done.append(f"cut {n}")
        elif op == "copy_other" and calls and len(s["lanes"]) > 1:
            i = rng.choice(calls)
            other = rng.choice([l for l in range(len(s["lanes"])) if l != steps[i][1]])
            j = rng.randint(0, len(steps))
            steps.insert(j, ["call", other, steps[i][2], copy.deepcopy(steps[i][3])])
            done.append(f"copy_other {i}->{j} lane {other}")
        elif op == "move_lane" and calls and len(s["lanes"]) > 1:
            i = rng.choice(calls)
            steps[i][1] = rng.choice([l for l in range(len(s["lanes"])) if l != steps[i][1]])
            done.append(f"move_lane {i}")
        elif op == "endpoint":
            lane = rng.randrange(len(s["lanes"]))
            s["endpoints"][lane] = "server" if s["endpoints"][lane] == "mcp" else "mcp"
            done.append(f"endpoint lane {lane}")
        elif op == "reopen":
            i = rng.randint(0, len(steps))
            steps.insert(i, ["reopen", rng.randrange(len(s["lanes"]))])
            done.append(f"reopen {i}")
    return s, done
