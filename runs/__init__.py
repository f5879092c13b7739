"""`mcpgw run`: benchmark tasks driven through the gateway by an OpenAI-compatible model.

The runner is only a client of the gateway's two endpoints (`/mcp` for tools,
`/v1` for the model), one run id per task, so a run recorded once replays with
no model endpoint, no server process and no network."""
