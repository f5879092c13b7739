"""The harnesses' result files given to `mcpgw eval --results`: which harness wrote each (MCP-Bench's
per-task results, MCP-Bench's saved metrics summary, MCPEval's evaluation results), loaded for re-scoring,
and MCP-Bench's summaries checked against the call log's rule metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpgw.evaluator import mcpbench_results, mcpbench_summary
from mcpgw.evaluator.tasks import PREDICTION_IDS, McpEvalTask, read_mcpeval_tasks


def result_kind(path: str) -> str:
    """What eval read a --results file as: MCP-Bench's per-task results, its saved metrics summary, or MCPEval's."""
    data = mcpbench_results.load_document(path)
    if mcpbench_summary.is_summary(data):
        return "mcpbench summary"
    return mcpbench_results.results_kind(data, path)


def load_results(paths: list[str]) -> tuple[dict[str, list[mcpbench_results.ResultTask]], list[dict[str, McpEvalTask]]]:
    """Each harness result file: MCP-Bench per-task results, or MCPEval evaluation results."""
    mcpbench: dict[str, list[mcpbench_results.ResultTask]] = {}
    mcpeval: list[dict[str, McpEvalTask]] = []
    for path in paths:
        data = mcpbench_results.load_document(path)
        if mcpbench_summary.is_summary(data):
            continue  # checked against the call log (summary_checks), not re-scored
        if mcpbench_results.results_kind(data, path) == "mcpbench":
            mcpbench[path] = mcpbench_results.read_results(path, data)
        else:
            mcpeval.append(read_mcpeval_tasks(path, id_keys=PREDICTION_IDS))
    return mcpbench, mcpeval


def summary_checks(paths: list[str], rules: Mapping[str, Any] | None) -> dict[str, Any]:
    """MCP-Bench's saved metrics files among --results: what they say, and (with a call log) whether the
    call log's MCP-Bench rules give the same, per model of the call log."""
    out: dict[str, Any] = {}
    for path in paths:
        data = mcpbench_results.load_document(path)
        if not mcpbench_summary.is_summary(data):
            continue
        reported = {k: v for k, v in data.items() if isinstance(v, (int, float))}
        if rules is None:
            out[path] = {"reported": {"reported": reported}}
            continue
        out[path] = {
            model: {"reported": reported, **mcpbench_summary.compare(reported, entry["overall"], entry["tasks"])}
            for model, entry in rules.items()
        }
    return out
