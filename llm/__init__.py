"""The model's side of a run: an OpenAI-compatible endpoint on the gateway (`/v1/...`)
that forwards to the configured model, records each exchange into the run's cassette
and answers from it in replay, lane per run id like `/mcp`."""
