"""Model B on model A's recording: the share of B's tool calls each answer source takes, and what a simulated
answer costs the gateway (the simulator's own time left out).

    python bench/bench_new_model.py [--tasks 24]

Model A (scripted, over HTTP) is recorded with `mcpgw run` over Unit Converter, Medical Calculator and the
stateful memory server (MCP-AgentBench-style queries). Model B (scripted) then runs on that recording with
`--model-mode live --overlay ... --on-miss simulate` and a scripted simulator: per task kind it repeats A's
call (recorded), spells out a schema default (equivalent), asks a novel conversion (simulated) or makes a
novel write on the memory server (refused: never simulated). Needs the lock's local profile installed
(`mcpgw servers install --profile local`); nothing else leaves the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcpgw.cassette.store import CassetteStore  # noqa: E402
from mcpgw.recorder.calllog import iter_calls  # noqa: E402
from tests.llm.scripted_model import ScriptedModel  # noqa: E402

KINDS = ("same", "default", "novel", "write")  # what model B does with task i (i % 4)


def task_calls(i: int, who: str) -> list[tuple[str, dict]]:
    kind = KINDS[i % 4]
    if kind == "write":
        name = f"Alice{i}" if who == "A" else f"Bob{i}"
        return [
            ("memory__create_entities", {"entities": [{"name": name, "entityType": "person", "observations": ["x"]}]})
        ]
    if kind == "default":
        arguments = (
            {"weight": 60 + i, "height": 170} if who == "A" else {"weight": 60 + i, "height": 170, "height_unit": "cm"}
        )
        return [("medical_calculator__bmi_bsa_calculator", arguments)]
    value = 100 + i if who == "A" or kind == "same" else 1000 + i
    return [("unit_converter__convert_temperature", {"value": value, "from_unit": "fahrenheit", "to_unit": "celsius"})]


def script(tasks: int, who: str) -> dict:
    return {
        ("tc", f"task number {i:03d}."): [
            {"tool_calls": [[n, a] for n, a in task_calls(i, who)]},
            {"text": f"{who} finished {i}"},
        ]
        for i in range(tasks)
    }


def simulator(tasks: int) -> dict:
    out = {}
    for i in range(tasks):
        if KINDS[i % 4] == "novel":
            body = {"original_value": 1000 + i, "converted_value": round((1000 + i - 32) * 5 / 9, 4)}
            out[("mcpbench", f'\\"value\\": {1000 + i}')] = [
                {
                    "text": json.dumps(
                        {"content": [{"type": "text", "text": json.dumps(body)}], "structuredContent": body}
                    )
                }
            ]
    return out


def mcpgw(*argv: str) -> None:
    done = subprocess.run([sys.executable, "-m", "mcpgw.cli", *argv], capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"mcpgw {argv[0]} failed:\n{done.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=24)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        queries = work / "queries.json"
        queries.write_text(
            json.dumps(
                [
                    {"id": f"t{i:03d}", "query": f"Handle task number {i:03d}.", "reference_answer": "-"}
                    for i in range(args.tasks)
                ]
            )
        )
        cassettes = work / "cassettes"
        common = ["--strategy", "tc", "--cassettes-dir", str(cassettes), "--concurrency", "4", "--max-rounds", "4"]
        model_a = ScriptedModel(script(args.tasks, "A"), model="model-a").start()
        try:
            mcpgw(
                "run",
                str(queries),
                "--model",
                "model-a",
                "--mode",
                "record",
                "--cassette",
                "A",
                *common,
                "--config",
                str(ROOT / "servers.lock.yaml"),
                "--servers",
                "unit_converter",
                "medical_calculator",
                "memory",
                "--llm-base-url",
                model_a.base_url,
                "--answers",
                str(work / "a.jsonl"),
            )
        finally:
            model_a.stop()
        model_b = ScriptedModel(script(args.tasks, "B"), model="model-b").start()
        sim = ScriptedModel(simulator(args.tasks), model="sim-1").start()
        started = time.perf_counter()
        try:
            mcpgw(
                "run",
                str(queries),
                "--model",
                "model-b",
                "--mode",
                "replay",
                "--cassette",
                "A",
                "--overlay",
                "B1",
                "--log-cassette",
                "B1-log",
                *common,
                "--model-mode",
                "live",
                "--llm-base-url",
                model_b.base_url,
                "--on-miss",
                "simulate",
                "--simulator-base-url",
                sim.base_url,
                "--simulator-model",
                "sim-1",
                "--answers",
                str(work / "b.jsonl"),
            )
        finally:
            model_b.stop()
            sim.stop()
        elapsed = time.perf_counter() - started
        sources = Counter(r["source"] for r in iter_calls(cassettes / "B1-log") if r["server"] != "@model")
        store = CassetteStore(cassettes / "B1-log", create=False, readonly=True)
        try:
            (summary,) = [run for _, run in store.items("runs") if run.get("kind") == "replay"]
        finally:
            store.env.close()
        made = summary["simulated"]
    total = sum(sources.values())
    print(f"model B on model A's recording: {args.tasks} tasks, {total} tool calls ({elapsed:.1f} s for B's run)")
    for name in ("recorded", "equivalent", "live", "simulated", "missed"):
        print(f"  {name:<11} {sources.get(name, 0):>4}  {100 * sources.get(name, 0) / total:5.1f}%")
    per = made["gateway_ms"] / made["made"] if made["made"] else float("nan")
    print(
        f"simulated answers: {made['made']} made, {made['failed']} failed; gateway time a simulated answer "
        f"(prompt, parsing, checks, overlay commit; the simulator's own time left out): {per:.2f} ms"
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
