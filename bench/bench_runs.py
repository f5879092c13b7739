"""Runs benchmark: prints numbers, asserts nothing.

(1) a replayed `mcpgw run`: 100 tasks x 5 tool calls (tc strategy, 6 model turns each),
    recorded once against a scripted model and the test fixture server, then replayed with
    the whole CLI (gateway start included), no model endpoint, no server process;
(2) the model passthrough's cost per recorded completion: p50/p99 of the same
    non-streamed completion sent straight to the scripted model, and through the gateway in
    record mode (committed to the cassette before it is answered), interleaved.

  python bench/bench_runs.py [--tasks 100] [--calls 5] [--completions 300]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcpgw.runs.gateway_process import GatewayProcess  # noqa: E402
from tests.conftest import misbehaving_entry  # noqa: E402
from tests.llm.scripted_model import ScriptedModel  # noqa: E402


def marker(i: int) -> str:
    return f"[bench task {i:04d}]"


def script(tasks: int, calls: int) -> dict:
    return {
        ("tc", marker(i)): [{"tool_calls": [["fx__echo", {"message": f"{i}-{c}"}]]} for c in range(calls)]
        + [{"text": f"answer {i}"}]
        for i in range(tasks)
    }


def cli(*args: str, env: dict | None = None) -> tuple[float, float, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mcpgw.cli", *args], cwd=ROOT, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"mcpgw {' '.join(args[:2])} failed: {done.stderr[-2000:]}")
    return wall, cpu, done


def replayed_run(work: Path, tasks: int, calls: int) -> None:
    task_file = work / "tasks.jsonl"
    task_file.write_text(
        "".join(
            json.dumps({"id": f"t{i:04d}", "query": f"{marker(i)} echo five things", "reference_answer": f"answer {i}"})
            + "\n"
            for i in range(tasks)
        )
    )
    config = work / "fx.yaml"
    config.write_text("version: 1\nservers:\n" + misbehaving_entry("fx"))
    common = [
        str(task_file),
        "--model",
        "scripted-1",
        "--strategy",
        "tc",
        "--concurrency",
        "8",
        "--cassettes-dir",
        str(work / "cassettes"),
        "--max-rounds",
        str(calls + 1),
    ]
    with ScriptedModel(script(tasks, calls)) as model:
        wall, _, _ = cli(
            "run",
            *common,
            "--mode",
            "record",
            "--config",
            str(config),
            "--cassette",
            "bench",
            "--llm-base-url",
            model.base_url,
        )
    print(f"recorded {tasks} tasks x {calls} calls in {wall:.1f}s")
    offline = {k: v for k, v in os.environ.items() if k != "PATH"}
    for attempt in range(2):
        wall, cpu, done = cli(
            "run", *common, "--mode", "replay", "--cassette", "bench", "--log-cassette", f"replay{attempt}", env=offline
        )
        summary = [line for line in done.stderr.splitlines() if "task(s) in" in line]
        print(
            f"replayed run {attempt + 1}: {wall:.2f}s wall, {cpu:.2f}s CPU (gateway + runner) :: {summary[0] if summary else ''}"
        )


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def passthrough_overhead(work: Path, completions: int) -> None:
    config = work / "fx.yaml"
    body = {"model": "scripted-1", "messages": [{"role": "user", "content": "[overhead] say hi"}]}
    with ScriptedModel({("mcpbench", "[overhead]"): [{"text": "hi"}] * (2 * completions + 20)}) as model:
        gateway = GatewayProcess(
            [
                "--mode",
                "record",
                "--config",
                str(config),
                "--cassettes-dir",
                str(work / "cassettes"),
                "--cassette",
                "overhead",
                "--llm-base-url",
                model.base_url,
            ],
            work / "overhead.log",
        )
        try:
            direct_s, through_s = [], []
            with httpx.Client(timeout=10) as client:
                for target in (model.base_url, gateway.base + "/v1"):  # warm both connections
                    client.post(target + "/chat/completions", json=body).raise_for_status()
                cpu_before = process_cpu(gateway.process.pid)
                for i in range(completions):
                    for target, samples in ((model.base_url, direct_s), (gateway.base + "/v1", through_s)):
                        started = time.perf_counter()
                        client.post(
                            target + "/chat/completions", json=body, headers={"X-Run-Id": f"r{i}"}
                        ).raise_for_status()
                        samples.append(time.perf_counter() - started)
                gateway_cpu = process_cpu(gateway.process.pid) - cpu_before
        finally:
            gateway.stop()
    p = lambda xs, q: sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] * 1000  # noqa: E731
    print(f"completion straight to the model: p50 {p(direct_s, 0.5):.2f} ms, p99 {p(direct_s, 0.99):.2f} ms")
    print(f"through the gateway, recorded:    p50 {p(through_s, 0.5):.2f} ms, p99 {p(through_s, 0.99):.2f} ms")
    print(
        f"passthrough overhead per recorded completion: p50 {p(through_s, 0.5) - p(direct_s, 0.5):.2f} ms "
        f"(n={completions}); the gateway's CPU per recorded completion: {gateway_cpu / completions * 1000:.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--completions", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        replayed_run(work, args.tasks, args.calls)
        passthrough_overhead(work, args.completions)


if __name__ == "__main__":
    main()
