"""Run `mcpgw` with a replayed call's work cut short at one stage, for bench/stage_costs.py. Bench only.

$MCPGW_STAGE names where the hot lane stops doing the call's work and answers a canned result instead:
- `held`: once the request is read whole at the HTTP protocol (by uvicorn's parser, or as a repeated head:
  gateway.http.repeat_head), the answer's write only;
- `prepared`: once every layer's check has passed (`HotLane.prepare`: context, guard and JSON parse,
  session, id table, the fast path's own checks);
- `tasked`: inside the answer's task, once the session is held and the cancel scope set (no handler run);
- `unlogged`: the whole call but its call-log record (`CallLog.append` does nothing);
- `unforwarded`: the whole call but the cassette lookup (the upstream's answer is canned);
- empty: the whole call.
Each stage's CPU minus the one before is what that layer costs. The patches stand in for the code they
replace only on the hot lane's way; the bench checks every answer is a result.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's packages, not an installed copy

from mcpgw.cli import main  # noqa: E402
from mcpgw.gateway.endpoints import fast_path, hot_lane  # noqa: E402
from mcpgw.gateway.http import hot_protocol  # noqa: E402
from mcpgw.gateway.routing import tool_calls  # noqa: E402
from mcpgw.gateway.upstreams.upstream import Reply  # noqa: E402
from mcpgw.recorder import calllog  # noqa: E402

CANNED = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"canned"}],"isError":false}}'
STAGE = os.environ.get("MCPGW_STAGE", "")


def _answer_canned(protocol: hot_protocol.HotLaneProtocol) -> None:
    cycle = protocol.cycle = hot_protocol._HotCycle(protocol._hot_keep_alive)
    protocol._respond(
        cycle, 200, [(b"content-length", str(len(CANNED)).encode()), (b"content-type", b"application/json")], CANNED
    )


HELD = object()  # `held`: what the lane's checks, skipped, hand on


def _patch() -> None:
    if STAGE in ("held", "prepared"):  # a request read (by the parser, or as a repeated head) is answered canned
        if STAGE == "held":
            hot_lane.HotLane.prepare = lambda self, *args, **kwargs: HELD

        def _take(self: hot_protocol.HotLaneProtocol, ready: object) -> None:
            if ready is not HELD:
                self.hot_lane.ids.release(ready.call.session_id, ready.entry)
            _answer_canned(self)

        hot_protocol.HotLaneProtocol._take = _take
    elif STAGE == "tasked":

        async def answer_unscoped(self: fast_path.FastPath, *args: object) -> bytes:
            return CANNED

        fast_path.FastPath.answer_unscoped = answer_unscoped
    elif STAGE == "unlogged":
        calllog.CallLog.append = lambda self, record: None
    elif STAGE == "unforwarded":

        async def _forward(
            self: tool_calls.ToolCalls, entry: object, params: object, arguments: object, options: object
        ) -> Reply:
            return Reply({"content": [{"type": "text", "text": "canned"}], "isError": False}, "recorded")

        tool_calls.ToolCalls._forward = _forward
    elif STAGE:
        raise SystemExit(f"MCPGW_STAGE={STAGE!r}: not a stage")


_patch()
sys.exit(main(sys.argv[1:]))
