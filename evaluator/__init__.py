"""Benchmark metrics, LLM judges, a per-tool validity audit and reports, from recorded call logs.

Definitions, the benchmarks' quirks reproduced, and deliberate deviations: evaluator/METRICS.md.

Modules, one concept each:
    calllog         call-log records: read, check, group by run
    tasks           task files (MCP-Bench, MCPEval, MCP-AgentBench), answers, human labels
    catalog         optional tool catalog (schemas, names, descriptions)
    schemas         schema compliance with MCP-Bench's semantics, compiled once per digest
    mcpbench_rules  MCP-Bench's rule-based metrics, from calls however they were recorded
    mcpbench_results MCP-Bench's own per-task result files, re-scored and compared
    mcpeval_match   MCPEval's tool-call matching
    agentbench      MCP-AgentBench categories and pass rates
    agreement       judge vs human agreement statistics
    audit           per-tool call-validity audit
    judges/         LLM judges, their client and recording store
    judging         running the judges over runs
    pipeline        inputs -> one report dict
    report/         terminal, JSON, Markdown and HTML renderings
    cli             the `eval` and `audit` subcommands
"""
