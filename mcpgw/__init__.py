"""The composition root: wires the gateway core with the recorder, replay and the evaluator.

`gateway/` is the core (upstream interface, live upstreams, router, catalog,
validation, front) and imports nothing of the features built on it.
`recorder/` (cassettes, call log), `replay/` (cassette upstream, drift) and
`evaluator/` (metrics) build on the core. Only this package knows them all:
`mcpgw.app` composes upstreams per mode, `mcpgw.cli` is the `mcpgw` command.
"""
