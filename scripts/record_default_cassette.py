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
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import PromptReference

sys.path.insert(0, str(Path(__file__).resolve().parent))
import default_session as session  # noqa: E402
from default_session import Step  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "servers.lock.yaml"
PROFILE = "local"
CASSETTES = ROOT / "cassettes"
CASSETTE = CASSETTES / "default"
VENV_BIN = ROOT / ".venv" / "bin"
PYTHON = VENV_BIN / "python" if (VENV_BIN / "python").exists() else Path(sys.executable)
STEP_TIMEOUT = 90.0
SECRET_NAMES = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL")


class Failure(Exception):
    """Something a person has to look at; the message says what."""


# -- the gateway process ------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Gateway:
    process: subprocess.Popen
    port: int
    log_path: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, run: str) -> str:
        return f"{self.base}/mcp?run={run}"

    def status(self) -> dict[str, Any]:
        return httpx.get(self.base + "/status", timeout=5).json()

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def start_gateway(args: list[str], *, env: dict[str, str], log_path: Path, cwd: Path) -> Gateway:
    port = free_port()
    log = open(log_path, "w")
    process = subprocess.Popen([*args, "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, env=env,
                               cwd=cwd, start_new_session=True)
    log.close()
    return Gateway(process, port, log_path)


def wait_settled(gateway: Gateway, timeout: float) -> dict[str, Any]:
    """Poll /status until no server is starting or restarting; bounded."""
    deadline = time.monotonic() + timeout
    status: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        if gateway.process.poll() is not None:
            raise Failure(f"gateway exited with code {gateway.process.returncode}:\n{gateway.log_tail()}")
        try:
            status = gateway.status()
        except httpx.HTTPError:
            time.sleep(0.2)
            continue
        if status["servers"] and all(s["state"] not in ("starting", "restarting") for s in status["servers"].values()):
            return status
        time.sleep(0.3)
    waiting = sorted(n for n, s in (status or {"servers": {}})["servers"].items() if s["state"] in ("starting", "restarting"))
    raise Failure(f"servers still starting after {timeout:.0f}s: {', '.join(waiting) or '(no /status answer)'}\n{gateway.log_tail()}")


def require_ready(status: dict[str, Any]) -> None:
    bad = {name: s for name, s in sorted(status["servers"].items()) if s["state"] != "ready"}
    if bad:
        lines = [f"  {name}: {s['state']} ({s.get('reason') or 'no reason given'})" for name, s in bad.items()]
        raise Failure(f"{len(bad)} of {len(status['servers'])} server(s) not ready:\n" + "\n".join(lines))


def stop_gateway(gateway: Gateway, timeout: float = 30) -> None:
    """SIGTERM and wait; a gateway that does not stop in time is killed, and that is a failure."""
    if gateway.process.poll() is not None:
        return
    gateway.process.send_signal(signal.SIGTERM)
    try:
        gateway.process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(gateway.process.pid, signal.SIGKILL)
        gateway.process.wait(timeout=10)
        raise Failure(f"gateway did not stop within {timeout:.0f}s of SIGTERM; killed it\n{gateway.log_tail()}") from None


# -- the scratch world the session works in ------------------------------------------------


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
    fixed = {"GIT_AUTHOR_NAME": "mcpgw recorder", "GIT_AUTHOR_EMAIL": "recorder@mcpgw.invalid",
             "GIT_COMMITTER_NAME": "mcpgw recorder", "GIT_COMMITTER_EMAIL": "recorder@mcpgw.invalid",
             "GIT_AUTHOR_DATE": "2026-01-05T09:00:00+00:00", "GIT_COMMITTER_DATE": "2026-01-05T09:00:00+00:00"}
    git_env = {**os.environ, **fixed}
    for command in (["init", "-q", "-b", "main"], ["config", "user.name", "mcpgw recorder"],
                    ["config", "user.email", "recorder@mcpgw.invalid"], ["config", "commit.gpgsign", "false"],
                    ["add", "README.md"], ["commit", "-q", "-m", "Start dose-tools"]):
        subprocess.run(["git", *command], cwd=repo, env=git_env, check=True, capture_output=True, timeout=30)


# -- playing the session -----------------------------------------------------------------


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"})


async def plan_session(url: str) -> tuple[list[Step], list[tuple[str, str]], int, int]:
    """The steps to play, from what the gateway exposes: the hand-written calls, generated ones
    for any tool nobody wrote a call for, every prompt. Also returns the skipped tools."""
    with anyio.fail_after(60):
        async with Client(url, mode="legacy") as client:
            tools = await _all(client.list_tools, "tools")
            prompts = await _all(client.list_prompts, "prompts")
    exposed = {t.name: t for t in tools}
    steps: list[Step] = [Step("list_tools")]
    for step in session.hand_written(date.today()):
        if step.kind == "tool" and step.target not in exposed:
            print(f"warning: {step.target} is not exposed by this gateway; its hand-written call is dropped")
            continue
        steps.append(step)
    covered = {s.target for s in steps if s.kind == "tool"}
    skipped = [(name, session.SKIP[name]) for name in exposed if name in session.SKIP]
    for name, spec in exposed.items():
        if name not in covered and name not in session.SKIP:
            steps.append(Step("tool", name, session.arguments_from_schema(spec.input_schema), generated=True))
    tail = session.resources_and_prompts()
    written_prompts = {s.target for s in tail if s.kind == "prompt"}
    for prompt in prompts:
        if prompt.name not in written_prompts:
            args = {a.name: "example" for a in prompt.arguments or [] if a.required}
            tail.insert(next(i for i, s in enumerate(tail) if s.kind == "complete"), Step("prompt", prompt.name, args))
    known_prompts = {p.name for p in prompts}
    steps += [s for s in tail if s.kind not in ("prompt", "complete") or s.target in known_prompts]
    read_only = {t.name for t in tools if t.annotations is not None and t.annotations.read_only_hint is True}
    return steps, skipped, len(tools), len(prompts), read_only


def newcomer_reads(steps: list[Step], read_only: set[str]) -> list[Step]:
    """The session's reads on servers whose state replay tracks (not declared stateless): read-only
    tool calls, resource reads, prompts, completions. Played first, in a lane of their own, so they
    are recorded at the state a new run starts in, and a newcomer's reads replay in any order.
    (Calls to stateless servers need no such pass: their keys never hold history.)"""
    from mcpgw.lock.config import load_config

    servers = load_config(CONFIG).servers

    def tracked(step: Step) -> bool:
        server = step.target.split("__", 1)[0]
        return server in servers and servers[server].tracked

    def read(step: Step) -> bool:
        if step.kind == "tool":
            return tracked(step) and step.target in read_only
        return step.kind in ("read", "prompt", "complete") and tracked(step)

    return [step for step in steps if read(step)]


async def _all(method: Any, key: str) -> list[Any]:
    items, cursor = [], None
    for _ in range(100):
        page = await method(cursor=cursor)
        items += getattr(page, key)
        cursor = page.next_cursor
        if not cursor:
            break
    return items


async def play(url: str, steps: list[Step], mode: str) -> list[dict[str, Any]]:
    """Play the steps in one client session; one observation per step (result or error)."""
    observations: list[dict[str, Any]] = []
    log_messages = Counter()

    async def on_log(params: Any) -> None:
        log_messages[getattr(params, "level", "?")] += 1

    async with Client(url, mode=mode, logging_callback=on_log) as client:
        for step in steps:
            seen: list[list[Any]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                seen.append([progress, total, message])

            observation: dict[str, Any] = {"step": step.label()}
            try:
                with anyio.fail_after(STEP_TIMEOUT):
                    observation["result"] = await _request(client, step, on_progress if step.progress else None)
            except MCPError as exc:
                observation["error"] = {"code": exc.code, "message": exc.message}
            except TimeoutError:
                observation["transport_error"] = f"no answer within {STEP_TIMEOUT:.0f}s"
            if step.progress:
                observation["progress"] = seen
            observations.append(observation)
    return observations


async def _request(client: Client, step: Step, on_progress: Any) -> Any:
    if step.kind == "tool":
        return dump(await client.call_tool(step.target, step.args, progress_callback=on_progress))
    if step.kind == "list_tools":
        return [dump(t) for t in await _all(client.list_tools, "tools")]
    if step.kind == "list_resources":
        return [dump(r) for r in await _all(client.list_resources, "resources")]
    if step.kind == "list_templates":
        return [dump(t) for t in await _all(client.list_resource_templates, "resource_templates")]
    if step.kind == "list_prompts":
        return [dump(p) for p in await _all(client.list_prompts, "prompts")]
    if step.kind == "read":
        return dump(await client.read_resource(step.target))
    if step.kind == "prompt":
        return dump(await client.get_prompt(step.target, step.args or None))
    if step.kind == "complete":
        ref = PromptReference(type="ref/prompt", name=step.target)
        return dump(await client.complete(ref, step.args["argument"], step.args.get("context")))
    raise ValueError(f"unknown step kind {step.kind!r}")


def outcome(observation: dict[str, Any]) -> str:
    if "error" in observation:
        return "protocol_error"
    if "transport_error" in observation:
        return "transport_error"
    result = observation["result"]
    return "tool_error" if isinstance(result, dict) and result.get("isError") else "ok"


def preview(observation: dict[str, Any], width: int = 70) -> str:
    if "error" in observation:
        text = f"{observation['error']['code']}: {observation['error']['message']}"
    elif "transport_error" in observation:
        text = observation["transport_error"]
    else:
        result = observation["result"]
        content = result.get("content") if isinstance(result, dict) else None
        first = content[0] if content else {}
        text = first.get("text") or first.get("type") or json.dumps(result)[:width]
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def print_table(steps: list[Step], observations: list[dict[str, Any]], skipped: list[tuple[str, str]]) -> Counter:
    rows: dict[str, list[Any]] = {}
    for step, obs in zip(steps, observations):
        if step.kind != "tool":
            continue
        row = rows.setdefault(step.target, [0, Counter(), preview(obs), step.generated])
        row[0] += 1
        row[1][outcome(obs)] += 1
    width = max(len(name) for name in rows) + 2
    print(f"\n{'tool':<{width}} {'calls':>5}  {'outcome':<22} first answer")
    totals: Counter = Counter()
    for name, (calls, outcomes, first, generated) in rows.items():
        label = ", ".join(f"{k}" if n == calls else f"{k}×{n}" for k, n in outcomes.items())
        print(f"{name:<{width}} {calls:>5}  {label:<22} {'[generated args] ' if generated else ''}{first}")
        totals.update(outcomes)
    for name, why in skipped:
        print(f"{name:<{width}} {0:>5}  {'skipped':<22} {why}")
    print("\nother requests:")
    for step, obs in zip(steps, observations):
        if step.kind != "tool":
            print(f"  {step.label():<60} {outcome(obs):<15} {preview(obs, 50)}")
    return totals


def check_environment_answer(steps: list[Step], observations: list[dict[str, Any]]) -> None:
    """get-env answers with the server's environment: make sure nothing secret-looking went into the cassette."""
    for step, obs in zip(steps, observations):
        if step.target != "everything__get-env" or "result" not in obs:
            continue
        text = "".join(c.get("text", "") for c in obs["result"].get("content", []))
        try:
            env = json.loads(text)
        except json.JSONDecodeError:
            env = {}
        suspicious = [k for k in env if any(word in k.upper() for word in SECRET_NAMES)]
        suspicious += [k for k, v in env.items() if isinstance(v, str) and "://" in v and "@" in v.split("://", 1)[1].split("/", 1)[0]]
        if suspicious:
            raise Failure(f"get-env recorded secret-looking variables {sorted(set(suspicious))}; record with a cleaner environment")


# -- comparing -------------------------------------------------------------------------------


def first_difference(a: Any, b: Any, path: str = "$") -> str:
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}: only in {'recorded' if key in a else 'replayed'}"
            if a[key] != b[key]:
                return first_difference(a[key], b[key], f"{path}.{key}")
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
    return f"{path}: {json.dumps(a)[:120]} vs {json.dumps(b)[:120]}"


def era_view(observation: dict[str, Any], era: str) -> dict[str, Any]:
    """What a client of `era` is meant to see of an answer recorded in the handshake era.
    2026-07-28 removed Tool.execution (task support; mcp_types: "2025-11-25 only; removed in
    2026-07-28"), so the SDK leaves it out of tools/list for such clients."""
    if era != "2026-07-28" or observation["step"] != "list_tools" or "result" not in observation:
        return observation
    return {**observation, "result": [{k: v for k, v in t.items() if k != "execution"} for t in observation["result"]]}


def compare(recorded: list[dict[str, Any]], replayed: list[dict[str, Any]], era: str) -> list[str]:
    problems = []
    for rec, rep in zip((era_view(o, era) for o in recorded), replayed):
        if rec != rep:
            problems.append(f"[{era}] {rec['step']}: {first_difference(rec, rep)}")
    if len(recorded) != len(replayed):
        problems.append(f"[{era}] {len(recorded)} recorded observations, {len(replayed)} replayed")
    return problems


# -- cassette files ----------------------------------------------------------------------------


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tidy_cassette() -> list[str]:
    """Leave only data.mdb; compact it when that makes it smaller. Returns notes for the report."""
    import lmdb

    notes = []
    names = sorted(p.name for p in CASSETTE.iterdir())
    notes.append(f"the record gateway left in {CASSETTE.relative_to(ROOT)}/: {', '.join(names)}")
    lock = CASSETTE / "lock.mdb"
    if lock.exists():
        lock.unlink()
        notes.append("removed lock.mdb (LMDB's reader table, created by every writable open; not data)")
    unexpected = [p.name for p in CASSETTE.iterdir() if p.name != "data.mdb"]
    if unexpected:
        raise Failure(f"unexpected files in {CASSETTE}: {unexpected}")
    before = (CASSETTE / "data.mdb").stat().st_size
    with tempfile.TemporaryDirectory() as tmp:
        env = lmdb.open(str(CASSETTE), readonly=True, lock=False, max_dbs=16, subdir=True)
        try:
            env.copy(tmp, compact=True)
        finally:
            env.close()
        after = (Path(tmp) / "data.mdb").stat().st_size
        if after < before:
            shutil.move(str(Path(tmp) / "data.mdb"), CASSETTE / "data.mdb")
            notes.append(f"compacted data.mdb: {before / 1024:.0f} KiB -> {after / 1024:.0f} KiB")
    return notes


def cassette_summary() -> dict[str, Any]:
    from mcpgw.recorder.cassette import Cassette

    cassette = Cassette(CASSETTE, create=False, readonly=True)
    try:
        recorded = cassette.load()
        methods = Counter(e["method"] for entries in recorded.exchanges.values() for e in entries)
        return {"servers": sorted(recorded.catalogs), "tools": sum(len(c["catalog"]["tools"]) for c in recorded.catalogs.values()),
                "exchanges": dict(methods), "calls": cassette.store.count("calls")}
    finally:
        cassette.store.env.close()


# -- main ------------------------------------------------------------------------------------------


def record(work: Path) -> tuple[list[Step], list[dict[str, Any]], dict[str, Any]]:
    for command in ("npx", "uvx", "git"):
        if shutil.which(command) is None:
            raise Failure(f"{command} is not on PATH; recording starts the lock's servers with it")
    prepare_world()
    try:
        if CASSETTE.exists():
            shutil.rmtree(CASSETTE)
            print(f"deleted the old {CASSETTE.relative_to(ROOT)}")
        mcpgw = [str(VENV_BIN / "mcpgw")] if (VENV_BIN / "mcpgw").exists() else [str(PYTHON), "-m", "mcpgw.cli"]
        gateway = start_gateway(
            [*mcpgw, "serve", "--mode", "record", "--cassette", "default", "--config", str(CONFIG), "--profile", PROFILE,
             "--cassettes-dir", str(CASSETTES)],
            env=dict(os.environ), log_path=work / "record.log", cwd=ROOT,
        )
        try:
            started = time.monotonic()
            status = wait_settled(gateway, timeout=300)
            require_ready(status)
            print(f"record gateway on port {gateway.port}: {len(status['servers'])} servers ready, {status['tools']} tools "
                  f"({time.monotonic() - started:.1f}s)")
            steps, skipped, n_tools, n_prompts, read_only = anyio.run(plan_session, gateway.url("planning"))
            print(f"session: {len(steps)} requests ({sum(s.kind == 'tool' for s in steps)} tool calls over "
                  f"{len({s.target for s in steps if s.kind == 'tool'})} of {n_tools} tools, {n_prompts} prompts)")
            reads = newcomer_reads(steps, read_only)
            print(f"newcomer pass: {len(reads)} reads of tracked servers, recorded first at the starting state")
            recorded_reads = anyio.run(play, gateway.url(session.RUN_ID + "-reads"), reads, "legacy")
            recorded = anyio.run(play, gateway.url(session.RUN_ID), steps, "legacy")
            status = gateway.status()
            require_ready(status)  # nobody crashed during the session
        finally:
            stop_gateway(gateway)
        print(f"record gateway stopped (exit code {gateway.process.returncode})")
        if gateway.process.returncode not in (0, -signal.SIGTERM):
            raise Failure(f"record gateway exited with {gateway.process.returncode}:\n{gateway.log_tail()}")
        totals = print_table(steps, recorded, skipped)
        print(f"\ntool calls: {dict(totals)}; skipped tools: {len(skipped)}")
        transport = [o["step"] for o in recorded if "transport_error" in o]
        if transport:
            raise Failure(f"requests without an answer (not recorded): {transport}")
        check_environment_answer(steps, recorded)
        failed_reads = [o["step"] for o in recorded_reads if "result" not in o]
        if failed_reads:
            raise Failure(f"newcomer reads without a result: {failed_reads}")
    except BaseException:
        shutil.rmtree(CASSETTE, ignore_errors=True)  # a half or unsafe recording is never left where it could be committed
        raise
    return steps, recorded, status, (reads, recorded_reads)


def verify(work: Path, steps: list[Step], recorded: list[dict[str, Any]], live_status: dict[str, Any],
           newcomer: tuple[list[Step], list[dict[str, Any]]]) -> list[str]:
    """Replay a copy of the cassette with nothing startable on PATH; compare every answer."""
    copy_dir = work / "replay" / "cassettes"
    (copy_dir / "default").mkdir(parents=True)
    shutil.copy2(CASSETTE / "data.mdb", copy_dir / "default" / "data.mdb")
    digest = sha256(CASSETTE / "data.mdb")
    env = {**os.environ, "PATH": "/nonexistent"}
    gateway = start_gateway(
        [str(PYTHON), "-m", "mcpgw.cli", "serve", "--mode", "replay", "--cassette", "default",
         "--cassettes-dir", str(copy_dir)],
        env=env, log_path=work / "replay.log", cwd=work / "replay",
    )
    problems: list[str] = []
    try:
        status = wait_settled(gateway, timeout=60)
        require_ready(status)
        started = [n for n, s in status["servers"].items() if s["pid"] is not None]
        if started:
            problems.append(f"replay started processes for {started}")
        if status["mode"] != "replay":
            problems.append(f"replay gateway reports mode {status['mode']!r}")
        if sorted(status["servers"]) != sorted(live_status["servers"]) or status["tools"] != live_status["tools"]:
            problems.append(f"replay serves {len(status['servers'])} servers / {status['tools']} tools, "
                            f"recording had {len(live_status['servers'])} / {live_status['tools']}")
        replayed = anyio.run(play, gateway.url("verify-legacy"), steps, "legacy")
        problems += compare(recorded, replayed, "legacy")
        modern = anyio.run(play, gateway.url("verify-2026"), steps, "2026-07-28")
        problems += compare(recorded, modern, "2026-07-28")
        reads, recorded_reads = newcomer
        order = list(range(len(reads)))[::-1]  # a newcomer's reads in another order: still answered, same answers
        shuffled = anyio.run(play, gateway.url("verify-reads"), [reads[i] for i in order], "2026-07-28")
        problems += compare([recorded_reads[i] for i in order], shuffled, "2026-07-28")
        misses = [o["step"] for o in replayed + modern + shuffled if "replay" in json.dumps(o.get("error", ""))]
        if misses:
            problems.append(f"replay misses: {misses[:10]}")
    finally:
        stop_gateway(gateway)
    if sha256(copy_dir / "default" / "data.mdb") != digest:
        problems.append("replaying changed data.mdb")
    left = sorted(str(p.relative_to(copy_dir)) for p in copy_dir.rglob("*") if p.is_file())
    print(f"files in the replay's cassettes dir afterwards: {', '.join(left)}")
    return problems


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
        print(f"\ncassette {CASSETTE.relative_to(ROOT)}: {len(summary['servers'])} servers, {summary['tools']} tools, "
              f"exchanges {summary['exchanges']}, {summary['calls']} call records, data.mdb {size / 1024:.0f} KiB")
        if problems:
            print(f"\nREPLAY CHECK FAILED ({len(problems)} problem(s)):")
            for problem in problems:
                print("  " + problem)
            return 1
        print(f"replay check: all {len(recorded)} answers equal the recorded ones, in both protocol eras, "
              f"with PATH=/nonexistent and no server process started")
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
