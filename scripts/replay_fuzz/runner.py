"""Playing a sequence against a gateway: one session per lane, one answer per step."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

from .gateway_process import Gateway
from .mcp_client import Session
from .sequences import P


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

    def play(
        self,
        seq: dict,
        run_ids: list[str | None],
        sessions: dict | None = None,
        parallel: float = 0.0,
        rng: random.Random | None = None,
    ) -> list:
        """Answers, one per step (None for reopen). `sessions`: carried over (same run ids twice).
        `parallel`: the probability that a call and the next one of the same lane are sent at once (the
        second a millisecond later, so it usually arrives second), as a planning round's parallel calls."""
        sessions = {} if sessions is None else sessions
        answers: list = []

        def session(lane: int) -> Session:
            if lane not in sessions:
                kind = seq["lanes"][lane][0]
                url = self.gw.base + "/servers/filesystem/mcp" if self.endpoint(seq, lane) == "server" else self.gw.url
                sessions[lane] = Session(
                    url, run=run_ids[lane], via_query=(kind == "qry"), modern=(kind == "m26")
                ).open()
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
            if (
                parallel
                and rng is not None
                and nxt
                and nxt[0] == "call"
                and nxt[1] == st[1]
                and rng.random() < parallel
            ):
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
