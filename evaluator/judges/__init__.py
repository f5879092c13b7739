"""LLM judges over any OpenAI-compatible chat-completions endpoint.

- `outcome`: MCP-AgentBench's MCP-Eval pass/fail;
- `rubric`: MCP-Bench's six-dimension rubric, shuffled and averaged over 5 runs;
- `aspects`: MCPEval's trajectory and completion judgements.

Every exchange goes through `client.JudgeClient`, which records it in a
`store` keyed by a digest of model + messages + params, so re-scoring is
deterministic and free, and `offline` re-scores from recordings only.
"""

from mcpgw.evaluator.judges.client import JudgeClient, JudgeConfig
from mcpgw.evaluator.judges.store import JsonlStore, LmdbStore, MemoryStore, open_store

__all__ = ["JudgeClient", "JudgeConfig", "JsonlStore", "LmdbStore", "MemoryStore", "open_store"]
