"""An MCP-Bench result file produced against MCP-Bench's resident server, then re-scored by `mcpgw eval`.

MCP-Bench's "Time MCP" is `mcp-server-time`; it is started here as users start it (uvx), its real
tools/list gives the task's available_tools, and the calls are made and recorded the way MCP-Bench's
executor makes and records them (known tools are called, isError or an exception is a failure,
unknown tools are not called and carry no server). The expected numbers follow from the real schemas.
"""

import json
import os
import shutil
import subprocess
import sys

import anyio
import pytest

pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

SERVER = "Time MCP"
TIME_SERVER = ["--from", "mcp-server-time==2026.10.19", "mcp-server-time", "--local-timezone", "UTC"]
PLAN = [  # what a planner emitted: (tool, parameters)
    ("Time MCP:get_current_time", {"timezone": "Europe/Oslo"}),  # valid, compliant, succeeds
    ("Time MCP:get_current_time", {"timezone": "Mars/Olympus"}),  # valid, compliant, isError
    ("Time MCP:convert_time", {"source_timezone": "UTC", "time": "25:99", "target_timezone": "Asia/Tokyo"}),
    ("Time MCP:get_current_time", None),  # null parameters: type object fails
    ("Time MCP:get_time", {"timezone": "UTC"}),  # no such tool: never called
]


async def run_like_mcpbench() -> tuple[dict, list[dict]]:
    params = StdioServerParameters(command="uvx", args=TIME_SERVER, env=dict(os.environ))
    with anyio.fail_after(120):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            tools = {}
            for tool in listed.tools:
                raw = tool.model_dump(by_alias=True, mode="json")
                tools[f"{SERVER}:{raw['name']}"] = {
                    "name": raw["name"],
                    "server": SERVER,
                    "description": raw.get("description") or "",
                    "input_schema": raw["inputSchema"],
                }
            results = []
            for name, parameters in PLAN:
                if name not in tools:
                    results.append(
                        {
                            "tool": name,
                            "parameters": parameters,
                            "round_num": 1,
                            "error": f"Tool '{name}' not found",
                            "success": False,
                        }
                    )
                    continue
                try:
                    reply = await session.call_tool(tools[name]["name"], parameters)
                    failed = bool(reply.model_dump(by_alias=True).get("isError"))
                    text = " ".join(c.text for c in reply.content if hasattr(c, "text"))
                except Exception as exc:  # noqa: BLE001 - MCP-Bench records any exception as a failure
                    failed, text = True, str(exc)
                results.append(
                    {
                        "tool": name,
                        "server": SERVER,
                        "parameters": parameters,
                        "round_num": 1,
                        "error" if failed else "result": text,
                        "success": not failed,
                    }
                )
            return tools, results


@pytest.mark.real  # starts a registry package (npx/uvx)
@pytest.mark.skipif(shutil.which("uvx") is None, reason="uvx is needed to start mcp-server-time")
def test_results_recorded_against_the_real_time_server(tmp_path):
    tools, executions = anyio.run(run_like_mcpbench)
    assert set(tools) == {"Time MCP:get_current_time", "Time MCP:convert_time"}
    assert [e["success"] for e in executions] == [True, False, False, False, False]
    results = tmp_path / "results.json"
    results.write_text(
        json.dumps(
            {
                "task_run_results": {
                    "agent-1": [
                        {
                            "task_id": "time_mcp_000",
                            "server_name": SERVER,
                            "model_name": "agent-1",
                            "status": "completed",
                            "execution_results": executions,
                            "available_tools": tools,
                            "total_rounds": 1,
                        }
                    ]
                }
            }
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mcpgw.cli", "eval", "--results", str(results), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    task = json.loads(proc.stdout)["mcpbench_rules"]["agent-1"]["tasks"]["time_mcp_000"]
    # valid names 4/5 (get_time does not exist); compliant 3/4 (the null parameters fail "type": "object");
    # success 1/5; valid-call failures 3/4; one server, no cross-server coordination.
    assert task["valid_tool_name_rate"] == 0.8 and task["input_schema_compliance"] == 0.75
    assert task["execution_success_rate"] == 0.2 and task["valid_call_failure_rate"] == 0.75
    assert task["server_utilization_metrics"] == {
        "server_count": 1,
        "cross_server_coordination": False,
        "server_distribution": {SERVER: 4},
    }
    assert task["planning_json_compliance"] == 1.0  # not reported by this executor: the runner's default
