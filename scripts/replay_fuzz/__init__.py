"""The replay differential fuzzer behind scripts/fuzz_replay.py, one concept per module:

gateway_process  starting and stopping `mcpgw serve` (record, replay, hybrid, live) on the filesystem server
mcp_client       a minimal MCP client session over streamable HTTP (both protocol eras, tagged or not)
sequences        random sequences of filesystem calls over one to three lanes
mutations        S -> S': drop, insert, swap, change, repeat, cut, move or copy across lanes, reopen
runner           plays a sequence against a gateway, one answer per step
comparison       replay answer vs live answer: normalization, refusals, findings, the report
batch            one batch: record, ground truth, replay unchanged and twice, replay mutants (and hybrid)
driver           batches until the sequence count or the time budget is reached; `check_replay`
"""
