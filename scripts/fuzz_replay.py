"""Differential fuzzer for mcpgw's replay promise: a replay answer is the live answer, or a refusal.

Oracle: the real filesystem MCP server (@modelcontextprotocol/server-filesystem). For each random
sequence S of tool calls (over 1-3 lanes: a run tagged by header, one tagged by ?run=, untagged
sessions; sessions closed and reopened mid-sequence):

1. record S through a recording gateway (fixed initial state);
2. replay S unchanged: every answer must be exactly the recorded one; then replay S a second
   time with the same run ids (same gateway), compared with the live answers of S;S;
3. mutate S into S' (drop, insert, swap, change an argument, repeat, cut short, copy a call
   another lane made, move a call to another lane, reopen a session);
4. ground truth: S' on a live gateway from the same initial state;
5. replay S' on a fresh replay gateway: each answer must be the live one or a refusal
   (JSON-RPC error -32005 "replay miss"/"replay refused", or an isError result saying so).

Two state layouts (`layout`):
- "isolated": the server has `isolation: run`, root ${RUN_STATE_DIR}: every lane has its own
  fresh, empty directory (the README's "fresh state per run"). Nothing is shared between lanes, so
  the promise must hold for every lane, whatever the cross-lane lookup rules. Sequences of a batch
  use the same relative paths, so keys collide across runs and sequences on purpose.
- "shared": one instance on one directory X (as the lock's own `filesystem` entry: isolation:
  shared); sequence i works under X/s<i>/ (reset to a fixed initial state before recording and
  before the ground truth). Lanes of one sequence share the files, which per-lane keys cannot see:
  wrong answers there on a multi-lane sequence are the cross-lane limitation (classified "shared
  cross-lane"); single-lane tagged sequences must keep the promise.

Volatile fields ignored: get_file_info's created/modified/accessed lines (wall-clock times of
the file: they differ between any two runs by nature); the absolute root directory in texts
(the per-run temporary directory, or X, appears in error messages, diffs and search results);
the random name of write_file's temporary file (`<path>.<32 hex>.tmp`, 16 random bytes) in the
error of a write over a directory.

Options: --hybrid also plays each S' in --mode hybrid (misses go live after catch-up), compared with
the same ground truth; --modern adds untagged 2026-07-28 clients (no session, cookie identity);
--replay-workers N replays with `--workers N`; lanes use /mcp or /servers/filesystem/mcp at random
(and a mutation flips it); --miss-as-tool-error is on for every other batch; --parallel-record P
sends two consecutive calls of a lane at once while recording, with probability P (a planning round):
this finds the known record-time race (a read racing a write is recorded under the key of the state
after the write with the answer of the state before it), so it is off by default.

Usage: python fuzz_replay.py --seed 1 --sequences 40 [--layout isolated|shared] [--budget 600]
         [--hybrid] [--modern] [--replay-workers 2] [--parallel-record 0.5] [--out findings.jsonl]
As a function: `check_replay(seed, n, layout, budget)` fails on a wrong answer. Needs the filesystem server in the npx cache (scripts/fetch-test-servers.sh),
node, and DIFZ_CODE (default: this checkout): the project checkout gateways run from (their cwd).
Cost: ~1-1.5 s per sequence in the shared layout, ~3-5 s isolated (a fresh server per lane per phase),
plus ~10 s of gateway starts per batch.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

# ---------------------------------------------------------------- gateways and a minimal MCP client


HERE = Path(__file__).resolve().parent
# the project checkout the gateways run from (their cwd): a scratch copy, never the developers' work tree
CODE = Path(os.environ.get("DIFZ_CODE", str(HERE.parent)))  # the checkout the gateways run from (their cwd)
PY = os.environ.get("DIFZ_PYTHON", sys.executable)
SERVING = re.compile(r"mcpgw: serving MCP at \S+ .*\(status: (http://\S+)/status\)")
FS_INDEX = next(Path.home().glob(".npm/_npx/*/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), None)
EV_INDEX = next(Path.home().glob(".npm/_npx/*/node_modules/@modelcontextprotocol/server-everything/dist/index.js"), None)
PROTO = "2025-06-18"
_ID_LOCK = threading.Lock()


def config_text(root: str, isolated: bool, everything: bool = False) -> str:
    fs_cmd = ("command: node\n    args: [%s, %s]" % (json.dumps(str(FS_INDEX)), json.dumps(root))) if FS_INDEX else (
        "command: npx\n    args: [\"-y\", \"@modelcontextprotocol/server-filesystem@2026.8.31\", %s]" % json.dumps(root))
    text = "version: 1\nservers:\n  filesystem:\n    %s\n    isolation: %s\n" % (fs_cmd, "run" if isolated else "shared")
    if everything:
        ev_cmd = ("command: node\n    args: [%s, \"stdio\"]" % json.dumps(str(EV_INDEX))) if EV_INDEX else (
            "command: npx\n    args: [\"-y\", \"@modelcontextprotocol/server-everything@2026.8.31\", \"stdio\"]")
        text += "  everything:\n    %s\n    isolation: %s\n" % (ev_cmd, "run" if isolated else "shared")
    return text


@dataclass
class Gateway:
    process: subprocess.Popen
    base: str
    log_path: Path

    @property
    def url(self) -> str:
        return self.base + "/mcp"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)


def start_gateway(workdir: Path, config: str, mode: str, cassette: str, cassettes_dir: Path, *extra: str,
                  settle: float = 120) -> Gateway:
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = workdir / f"config-{mode}-{cassette}.yaml"
    cfg.write_text(config)
    log_path = workdir / f"gateway-{mode}-{cassette}.log"
    log = open(log_path, "w")
    port = 0
    if "--workers" in extra:
        import socket
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
    process = subprocess.Popen(
        [PY, "-m", "mcpgw", "serve", "--config", str(cfg), "--port", str(port), "--cassettes-dir", str(cassettes_dir),
         "--cassette", cassette, "--mode", mode, "--naming", "prefix", *extra],  # /mcp lanes call filesystem__<tool>
        stdout=log, stderr=subprocess.STDOUT, cwd=str(CODE), start_new_session=True,
    )
    gw = Gateway(process, f"http://127.0.0.1:{port}" if port else "", log_path)
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gateway exited: {gw.log()[-3000:]}")
        if not gw.base:
            m = SERVING.search(gw.log())
            if m:
                gw.base = m.group(1)
        if gw.base:
            try:
                r = httpx.get(gw.base + "/readyz", timeout=2)
                if r.status_code == 200:
                    return gw
            except httpx.HTTPError:
                pass
        time.sleep(0.05)
    gw.stop()
    raise RuntimeError(f"gateway did not settle: {gw.log()[-3000:]}")


class RpcError(Exception):
    def __init__(self, error: dict):
        super().__init__(json.dumps(error)[:500])
        self.error = error


@dataclass
class Session:
    """One MCP client session (handshake era) over streamable HTTP; `run`: X-Run-Id, or None (untagged)."""

    url: str
    run: str | None = None
    via_query: bool = False
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=60))
    sid: str | None = None
    next_id: int = 1
    modern: bool = False  # a 2026-07-28 client: no handshake, no session; untagged ones are known by a cookie

    def _headers(self) -> dict[str, str]:
        h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
             "MCP-Protocol-Version": PROTO}
        if self.modern:
            h["MCP-Protocol-Version"] = "2026-07-28"
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
        if self.run and not self.via_query:
            h["X-Run-Id"] = self.run
        return h

    def _target(self) -> str:
        if self.run and self.via_query:
            return self.url + "?run=" + self.run
        return self.url

    def _post(self, body: dict) -> dict | None:
        headers = self._headers()
        if self.modern:
            headers["Mcp-Method"] = body["method"]
            name = (body.get("params") or {}).get("name") or (body.get("params") or {}).get("uri")
            if name:
                headers["Mcp-Name"] = name
        r = self.client.post(self._target(), headers=headers, content=json.dumps(body))
        if "id" not in body:
            return None
        if r.status_code >= 400 and not r.content:
            raise RpcError({"code": -1, "message": f"HTTP {r.status_code}"})
        ctype = r.headers.get("content-type", "")
        if "text/event-stream" in ctype:
            for block in r.text.split("\n\n"):
                data = "\n".join(l[5:].lstrip() for l in block.splitlines() if l.startswith("data:"))
                if not data:
                    continue
                msg = json.loads(data)
                if msg.get("id") == body["id"] and ("result" in msg or "error" in msg):
                    return msg
            raise RpcError({"code": -2, "message": f"no answer in stream: {r.text[:300]}"})
        try:
            return r.json()
        except ValueError:
            raise RpcError({"code": -3, "message": f"HTTP {r.status_code}: {r.text[:300]}"})

    def open(self) -> "Session":
        if self.modern:
            return self
        body = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": PROTO, "capabilities": {}, "clientInfo": {"name": "difz", "version": "0"}}}
        r = self.client.post(self._target(), headers=self._headers(), content=json.dumps(body))
        r.raise_for_status()
        self.sid = r.headers.get("mcp-session-id")
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    def request(self, method: str, params: dict) -> dict:
        """The JSON-RPC answer: {"result": ...} or {"error": ...}."""
        with _ID_LOCK:
            self.next_id += 1
            rid = self.next_id
        if self.modern:
            params = {**params, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                          "io.modelcontextprotocol/clientCapabilities": {},
                                          "io.modelcontextprotocol/clientInfo": {"name": "difz", "version": "0"}}}
        msg = self._post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        assert msg is not None
        return {k: msg[k] for k in ("result", "error") if k in msg}

    def call(self, tool: str, arguments: dict) -> dict:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def close(self) -> None:
        try:
            if self.sid:
                self.client.delete(self.url, headers=self._headers())
        except httpx.HTTPError:
            pass
        self.client.close()


# ---------------------------------------------------------------- the fuzzer

P = "filesystem__"
FILES = ["a.txt", "b.txt", "d/c.txt", "d/a.txt", "e/f.txt"]
DIRS = ["d", "e", "d/sub"]
CONTENTS = ["alpha\n", "beta\n", "alpha\nbeta\n", "", "gamma"]
PATTERNS = ["*.txt", "**/*.txt", "a*", "c.txt"]

# lanes: (kind, name). kind: "hdr" tagged by X-Run-Id, "qry" tagged by ?run=, "anon" untagged
LANE_KINDS = [("hdr", "A"), ("qry", "B"), ("anon", "U"), ("anon", "V")]
MODERN_LANE = ("m26", "M")  # an untagged 2026-07-28 client (cookie identity); opt-in (--modern) to keep old seeds stable


# ---------------------------------------------------------------- generation

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


def mutate(seq: dict, rng: random.Random) -> tuple[dict, list[str]]:
    s = copy.deepcopy(seq)
    steps = s["steps"]
    done = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        op = rng.choice(["drop", "insert", "swap", "change", "repeat", "cut", "copy_other", "move_lane",
                         "reopen", "insert_read", "endpoint"])
        calls = [i for i, st in enumerate(steps) if st[0] == "call"]
        if op == "drop" and steps:
            i = rng.randrange(len(steps)); steps.pop(i); done.append(f"drop {i}")
        elif op == "insert":
            i = rng.randint(0, len(steps)); tool, args = rand_call(rng)
            steps.insert(i, ["call", rng.randrange(len(s["lanes"])), tool, args]); done.append(f"insert {i}")
        elif op == "insert_read" and calls:
            # a read of a path the sequence uses, in some lane, anywhere
            i = rng.randint(0, len(steps)); path = rng.choice(FILES)
            steps.insert(i, ["call", rng.randrange(len(s["lanes"])), "read_text_file", {"path": path}])
            done.append(f"insert_read {i}")
        elif op == "swap" and len(steps) >= 2:
            i = rng.randrange(len(steps) - 1); steps[i], steps[i + 1] = steps[i + 1], steps[i]; done.append(f"swap {i}")
        elif op == "change" and calls:
            i = rng.choice(calls); tool, args = rand_call(rng)
            if rng.random() < 0.5 and steps[i][3]:  # same tool, one argument changed
                tool = steps[i][2]; args = copy.deepcopy(steps[i][3]); key = rng.choice(sorted(args))
                pool = {"path": FILES + DIRS, "content": CONTENTS, "source": FILES, "destination": FILES,
                        "pattern": PATTERNS}.get(key)
                if pool:
                    args[key] = rng.choice(pool)
            steps[i] = ["call", steps[i][1], tool, args]; done.append(f"change {i}")
        elif op == "repeat" and calls:
            i = rng.choice(calls); j = rng.randint(i + 1, len(steps)); steps.insert(j, copy.deepcopy(steps[i]))
            done.append(f"repeat {i}->{j}")
        elif op == "cut" and len(steps) > 1:
            n = rng.randrange(1, len(steps)); del steps[n:]; done.append(f"cut {n}")
        elif op == "copy_other" and calls and len(s["lanes"]) > 1:
            i = rng.choice(calls); other = rng.choice([l for l in range(len(s["lanes"])) if l != steps[i][1]])
            j = rng.randint(0, len(steps)); steps.insert(j, ["call", other, steps[i][2], copy.deepcopy(steps[i][3])])
            done.append(f"copy_other {i}->{j} lane {other}")
        elif op == "move_lane" and calls and len(s["lanes"]) > 1:
            i = rng.choice(calls); steps[i][1] = rng.choice([l for l in range(len(s["lanes"])) if l != steps[i][1]])
            done.append(f"move_lane {i}")
        elif op == "endpoint":
            lane = rng.randrange(len(s["lanes"]))
            s["endpoints"][lane] = "server" if s["endpoints"][lane] == "mcp" else "mcp"
            done.append(f"endpoint lane {lane}")
        elif op == "reopen":
            i = rng.randint(0, len(steps)); steps.insert(i, ["reopen", rng.randrange(len(s["lanes"]))])
            done.append(f"reopen {i}")
    return s, done


# ---------------------------------------------------------------- execution

class Runner:
    """Plays sequences of one batch against a gateway; lanes named by `run_ids` (None: untagged)."""

    def __init__(self, gw: Gateway, prefix: Path | str):
        self.gw = gw
        self.prefix = str(prefix)

    def path(self, p: str) -> str:
        if not self.prefix:
            return p
        return self.prefix if p == "." else f"{self.prefix}/{p}"

    def localize(self, args: dict) -> dict:
        out = {}
        for k, v in args.items():
            if k in ("path", "source", "destination"):
                out[k] = self.path(v)
            elif k == "paths":
                out[k] = [self.path(x) for x in v]
            else:
                out[k] = v
        return out

    @staticmethod
    def endpoint(seq: dict, lane: int) -> str:
        return (seq.get("endpoints") or ["mcp"] * 5)[lane]

    def play(self, seq: dict, run_ids: list[str | None], sessions: dict | None = None, parallel: float = 0.0,
             rng: random.Random | None = None) -> list:
        """Answers, one per step (None for reopen). `sessions`: carried over (same run ids twice).
        `parallel`: the probability that a call and the next one of the same lane are sent at once (the
        second a millisecond later, so it usually arrives second), as a planning round's parallel calls."""
        sessions = {} if sessions is None else sessions
        answers: list = []

        def session(lane: int) -> Session:
            if lane not in sessions:
                kind = seq["lanes"][lane][0]
                url = self.gw.base + "/servers/filesystem/mcp" if self.endpoint(seq, lane) == "server" else self.gw.url
                sessions[lane] = Session(url, run=run_ids[lane], via_query=(kind == "qry"), modern=(kind == "m26")).open()
            return sessions[lane]

        def send(st: list) -> dict:
            _, lane, tool, args = st
            name = tool if self.endpoint(seq, lane) == "server" else P + tool
            return session(lane).call(name, self.localize(args))

        steps = seq["steps"]
        i = 0
        while i < len(steps):
            st = steps[i]
            if st[0] == "reopen":
                if st[1] in sessions:
                    sessions.pop(st[1]).close()
                answers.append(None)
                i += 1
                continue
            nxt = steps[i + 1] if i + 1 < len(steps) else None
            if parallel and rng is not None and nxt and nxt[0] == "call" and nxt[1] == st[1] and rng.random() < parallel:
                session(st[1])
                out: dict = {}

                def second():
                    time.sleep(0.001)
                    out[1] = send(nxt)
                t = threading.Thread(target=second)
                t.start()
                out[0] = send(st)
                t.join()
                answers += [out[0], out[1]]
                i += 2
                continue
            answers.append(send(st))
            i += 1
        return answers


def close_all(sessions: dict) -> None:
    for s in sessions.values():
        s.close()
    sessions.clear()


# ---------------------------------------------------------------- comparison

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
        return json.dumps({"layout": self.layout, "seed": self.seed, "seq": self.seq_index, "check": self.check,
                           "step": self.step, "ops": self.ops, "recorded": self.recorded, "replayed": self.replayed,
                           "replay_answer": self.replay_answer, "truth_answer": self.truth_answer}, indent=None)


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


def compare(report: Report, finding_base: dict, replay: list, truth: list, roots: list[str], *, refusals_ok: bool,
            offset: int = 0, hybrid: bool = False) -> None:
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


# ---------------------------------------------------------------- one batch

def single_tagged(seq: dict) -> bool:
    return len(seq["lanes"]) == 1 and seq["lanes"][0][0] in ("hdr", "qry")


def reset_shared(root: Path, i: int) -> None:
    d = root / f"s{i}"
    shutil.rmtree(d, ignore_errors=True)
    (d / "d").mkdir(parents=True)
    (d / "a.txt").write_text("alpha\n")
    (d / "d" / "c.txt").write_text("gamma\n")


def run_batch(report: Report, work: Path, layout: str, seed: int, batch: int, seqs: list[dict], mutants: list,
              live: Gateway, truth_root: Path | None, miss_as_tool_error: bool, replay_workers: int = 1,
              hybrid: bool = False, parallel_record: float = 0.0) -> None:
    isolated = layout == "isolated"
    root = work / "X"
    cass = work / "cassettes"
    name = f"b{seed}-{batch}"
    cfg = config_text("${RUN_STATE_DIR}" if isolated else str(root), isolated)
    roots = [str(root)] + ([str(truth_root)] if truth_root else [])
    extra = ["--miss-as-tool-error"] if miss_as_tool_error else []
    if replay_workers > 1:
        extra += ["--workers", str(replay_workers)]

    def ids(i: int, seq: dict, tag: str) -> list[str | None]:
        return [None if kind in ("anon", "m26") else f"{tag}{seed}-{batch}-{i}-{nm}" for kind, nm in seq["lanes"]]

    def prefix(i: int) -> str:
        return "" if isolated else f"s{i}"

    # 1. record
    if not isolated:
        for i in range(len(seqs)):
            reset_shared(root, i)
    rec = start_gateway(work, cfg, "record", name, cass)
    recorded = []
    try:
        for i, seq in enumerate(seqs):
            sessions: dict = {}
            recorded.append(Runner(rec, prefix(i)).play(seq, ids(i, seq, "r"), sessions, parallel=parallel_record,
                                                        rng=random.Random(seed * 7919 + batch * 131 + i)))
            close_all(sessions)
            report.calls += sum(1 for a in recorded[-1] if a is not None)
            report.rpc_errors += sum(1 for a in recorded[-1] if a is not None and "error" in a)
    finally:
        rec.stop()

    # 2. ground truth: S' from the initial state; S;S (the same run ids twice) from the initial state
    truth_mut, truth_twice = [], []
    nonce = f"{int(time.time() * 1000) % 10**8}"
    for i, seq in enumerate(seqs):
        live_prefix = prefix(i)
        if not isolated:
            reset_shared(truth_root, i)
        truth_mut.append(Runner(live, live_prefix).play(mutants[i][0], ids(i, seq, f"t{nonce}m")))
        if not isolated:
            reset_shared(truth_root, i)
        sessions = {}
        run_ids = ids(i, seq, f"t{nonce}w")
        first = Runner(live, live_prefix).play(seq, run_ids, sessions)
        close_all(sessions)  # a second evaluation: new sessions, the same run ids
        second = Runner(live, live_prefix).play(seq, run_ids, {})
        truth_twice.append((first, second))
        report.calls += sum(1 for a in truth_mut[-1] + first + second if a is not None)

    # 3. replay S unchanged, then S again with the same run ids (one replay gateway)
    rep = start_gateway(work, cfg, "replay", name, cass, *extra)
    try:
        for i, seq in enumerate(seqs):
            base = dict(layout=layout, seed=seed, seq_index=batch * 1000 + i, recorded=seq, ops=[],
                        single_tagged=single_tagged(seq))
            sessions = {}
            runner = Runner(rep, prefix(i))
            again = runner.play(seq, ids(i, seq, "r"), sessions)
            close_all(sessions)
            # recorded with parallel calls, a pair that arrived in the other order is keyed in that order:
            # replayed one at a time it misses, a refusal, not a wrong answer
            compare(report, {**base, "check": "unchanged", "replayed": seq}, again, recorded[i], roots,
                    refusals_ok=parallel_record > 0)
            twice = runner.play(seq, ids(i, seq, "r"), {})
            compare(report, {**base, "check": "twice", "replayed": seq}, twice, truth_twice[i][1], roots,
                    refusals_ok=True)
            report.calls += sum(1 for a in again + twice if a is not None)
    finally:
        rep.stop()

    # 4. replay S' on a fresh replay gateway
    def play_mutants(gateway: Gateway, check: str) -> None:
        """Each S' on `gateway`, every answer compared with S' live (a refusal allowed)."""
        try:
            for i, seq in enumerate(seqs):
                mut, ops = mutants[i]
                answers = Runner(gateway, prefix(i)).play(mut, ids(i, seq, "r"))
                base = dict(layout=layout, seed=seed, seq_index=batch * 1000 + i, recorded=seq, ops=ops,
                            single_tagged=single_tagged(seq) and single_tagged(mut))
                compare(report, {**base, "check": check, "replayed": mut}, answers, truth_mut[i], roots,
                        refusals_ok=True, hybrid=check == "hybrid")
                report.calls += sum(1 for a in answers if a is not None)
        finally:
            gateway.stop()

    play_mutants(start_gateway(work, cfg, "replay", name, cass, *extra), "mutant")
    # 5. hybrid: S' on a copy of the recording; misses go live (fresh instance caught up on the run's history)
    if hybrid:
        if not isolated:
            for i in range(len(seqs)):
                reset_shared(root, i)
        shutil.copytree(cass / name, cass / (name + "-h"))
        play_mutants(start_gateway(work, cfg, "hybrid", name + "-h", cass, "--run-idle-timeout", "600"), "hybrid")
    report.sequences += len(seqs)


def run_fuzz(seed: int, sequences: int, layout: str = "isolated", budget: float = 900.0, batch_size: int = 20,
             work: Path | None = None, log=print, replay_workers: int = 1, hybrid: bool = False,
             modern: bool = False, parallel_record: float = 0.0) -> Report:
    """Fuzz `sequences` sequences (fewer if `budget` seconds run out); the Report's `wrong` lists
    every replay answer that was a result other than the live one."""
    started = time.monotonic()
    report = Report()
    rng = random.Random(seed)
    own = work is None
    work = Path(tempfile.mkdtemp(prefix=f"difz-{layout}-")) if own else work
    work.mkdir(parents=True, exist_ok=True)
    truth_root = work / "T"
    (work / "X").mkdir(exist_ok=True)
    truth_root.mkdir(exist_ok=True)
    isolated = layout == "isolated"
    live_cfg = config_text("${RUN_STATE_DIR}" if isolated else str(truth_root), isolated)
    live = start_gateway(work / "live", live_cfg, "live", "truth-log", work / "live-cassettes",
                         "--run-idle-timeout", "600")
    try:
        batch = 0
        while report.sequences < sequences and time.monotonic() - started < budget:
            n = min(batch_size, sequences - report.sequences)
            seqs = [gen_sequence(rng, modern) for _ in range(n)]
            mutants = [mutate(s, rng) for s in seqs]
            run_batch(report, work, layout, seed, batch, seqs, mutants, live, None if isolated else truth_root,
                      miss_as_tool_error=(batch % 2 == 1), replay_workers=replay_workers, hybrid=hybrid,
                      parallel_record=parallel_record)
            batch += 1
            log(f"[{layout} seed={seed}] batch {batch}: {report.sequences} sequences, {report.calls} calls, "
                f"{report.compared} compared, {report.refusals} refusals, {len(report.wrong)} wrong, "
                f"{len(report.cross_lane)} cross-lane, {len(report.errors)} errors, {report.rpc_errors} rpc errors recording, {time.monotonic() - started:.0f}s {json.dumps(report.by_check)}")
    finally:
        live.stop()
        report.seconds = time.monotonic() - started
        if own:
            shutil.rmtree(work, ignore_errors=True)
    return report


def check_replay(seed: int, sequences: int, layout: str = "isolated", budget: float = 300.0, **options) -> Report:
    """Fuzz, and fail (AssertionError naming the first findings) on any replay answer that is a result
    other than the live one. Bounded: stops starting batches once `budget` seconds have passed."""
    report = run_fuzz(seed, sequences, layout, budget, batch_size=options.pop("batch_size", 5), **options)
    assert report.compared > 0, "nothing was compared"
    assert not report.wrong, f"{len(report.wrong)} wrong replay answer(s):\n" + "\n".join(f.brief() for f in report.wrong[:3])
    assert not report.errors, f"{len(report.errors)} error(s) that are no refusal:\n" + "\n".join(f.brief() for f in report.errors[:3])
    return report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sequences", type=int, default=40)
    ap.add_argument("--layout", choices=["isolated", "shared"], default="isolated")
    ap.add_argument("--budget", type=float, default=900)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--out", default=None, help="write findings (JSON lines) here")
    ap.add_argument("--work", default=None)
    ap.add_argument("--replay-workers", type=int, default=1)
    ap.add_argument("--hybrid", action="store_true", help="also play each S' in --mode hybrid")
    ap.add_argument("--modern", action="store_true", help="lanes may also be untagged 2026-07-28 clients")
    ap.add_argument("--parallel-record", type=float, default=0.0,
                    help="probability that two consecutive calls of a lane are sent at once while recording")
    a = ap.parse_args()
    report = run_fuzz(a.seed, a.sequences, a.layout, a.budget, a.batch, Path(a.work) if a.work else None,
                      replay_workers=a.replay_workers, hybrid=a.hybrid, modern=a.modern,
                      parallel_record=a.parallel_record)
    print(json.dumps({"sequences": report.sequences, "calls": report.calls, "compared": report.compared,
                      "refusals": report.refusals, "equal": report.equal, "wrong": len(report.wrong),
                      "cross_lane": len(report.cross_lane), "errors": len(report.errors), "seconds": round(report.seconds, 1),
                      "rpc_errors_while_recording": report.rpc_errors,
                      "by_check": report.by_check}))
    if a.out:
        with open(a.out, "w") as fh:
            for f in report.wrong:
                fh.write(json.dumps({"kind": "wrong", **json.loads(f.brief())}) + "\n")
            for f in report.cross_lane:
                fh.write(json.dumps({"kind": "cross_lane", **json.loads(f.brief())}) + "\n")
            for f in report.errors:
                fh.write(json.dumps({"kind": "error", **json.loads(f.brief())}) + "\n")
    sys.exit(1 if report.wrong or report.errors else 0)


if __name__ == "__main__":
    main()
