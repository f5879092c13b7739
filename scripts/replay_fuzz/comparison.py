"""Comparing a replay answer with the live one: volatile fields, refusals, findings and the report."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

TIME_LINE = re.compile(r"^(created|modified|accessed): .*$", re.M)
ROOTS = re.compile(r"(/private)?/tmp/mcpgw-filesystem-[A-Za-z0-9_]+")
TEMP_NAME = re.compile(r"\.[0-9a-f]{32}\.tmp")  # write_file's temporary file (random bytes), named in its errors


def normalize(answer: dict, roots: list[str]) -> str:
    text = json.dumps(answer, sort_keys=True)
    text = ROOTS.sub("<ROOT>", text)
    text = TEMP_NAME.sub(".<RANDOM>.tmp", text)
    for r in roots:
        text = text.replace(r, "<ROOT>")
    text = TIME_LINE.sub(lambda m: m.group(1) + ": <TIME>", text.replace("\\n", "\n")).replace("\n", "\\n")
    return text


def refusal(answer: dict) -> bool:
    err = answer.get("error")
    if err is not None:
        return err.get("code") == -32005
    res = answer.get("result") or {}
    if res.get("isError"):
        texts = " ".join(c.get("text", "") for c in res.get("content") or [] if isinstance(c, dict))
        return texts.startswith("replay miss") or texts.startswith("replay refused")
    return False


def hybrid_refusal(answer: dict) -> bool:
    """Hybrid catch-up failing says so (ReplayDiverged, code -32005 too); anything else is an answer."""
    err = answer.get("error") or {}
    return "hybrid catch-up failed" in str(err.get("message", ""))


@dataclass
class Finding:
    layout: str
    seed: int
    seq_index: int
    check: str  # "mutant", "unchanged", "twice"
    step: int
    recorded: dict
    replayed: dict
    ops: list
    replay_answer: dict
    truth_answer: dict
    single_tagged: bool

    def brief(self) -> str:
        return json.dumps(
            {
                "layout": self.layout,
                "seed": self.seed,
                "seq": self.seq_index,
                "check": self.check,
                "step": self.step,
                "ops": self.ops,
                "recorded": self.recorded,
                "replayed": self.replayed,
                "replay_answer": self.replay_answer,
                "truth_answer": self.truth_answer,
            },
            indent=None,
        )


@dataclass
class Report:
    sequences: int = 0
    calls: int = 0
    compared: int = 0
    refusals: int = 0
    equal: int = 0
    wrong: list[Finding] = field(default_factory=list)  # breaks the promise
    cross_lane: list[Finding] = field(default_factory=list)  # shared layout, multi-lane: documented limitation
    errors: list[Finding] = field(default_factory=list)  # a JSON-RPC error that is no refusal where live answered
    seconds: float = 0.0
    rpc_errors: int = 0  # JSON-RPC errors while recording (should stay 0: the server answers isError results)
    by_check: dict = field(default_factory=dict)  # check -> {"equal": n, "refused": n, "wrong": n}

    def count(self, check: str, outcome: str) -> None:
        d = self.by_check.setdefault(check, {"equal": 0, "refused": 0, "wrong": 0, "error": 0})
        d[outcome] += 1


def compare(
    report: Report,
    finding_base: dict,
    replay: list,
    truth: list,
    roots: list[str],
    *,
    refusals_ok: bool,
    offset: int = 0,
    hybrid: bool = False,
) -> None:
    for i, (a, t) in enumerate(zip(replay, truth)):
        if a is None:
            continue
        if "Unknown tool" in json.dumps(t.get("error", "")):  # every answer would compare equal, proving nothing
            raise RuntimeError(f"fuzzer setup: the live gateway does not know the tool called: {t['error']}")
        report.compared += 1
        check = finding_base["check"]
        if refusals_ok and (refusal(a) or (hybrid and hybrid_refusal(a))):
            report.refusals += 1
            report.count(check, "refused")
            continue
        if normalize(a, roots) == normalize(t, roots):
            report.equal += 1
            report.count(check, "equal")
            continue
        f = Finding(**finding_base, step=offset + i, replay_answer=a, truth_answer=t)
        if "error" in a and "error" not in t:  # not a result at all: an error that is not a refusal either
            report.errors.append(f)
            report.count(check, "error")
            continue
        report.count(check, "wrong")
        (report.cross_lane if (finding_base["layout"] == "shared" and not f.single_tagged) else report.wrong).append(f)
