"""The scripted session recorded into cassettes/default, behind scripts/default_session.py, one concept per module:

step                         a request of the session (`Step`) and the shorthand for a tool call
scratch_world                the paths the session works in and the files it writes there
calculator_calls             unit_converter, medical_calculator and numpy_mcp calls
time_thinking_memory_calls   time, time_mcp, sequential_thinking and memory calls
workspace_calls              filesystem and git calls on the scratch workspace and repository
everything_calls             the everything server: its tools, resources, templates, prompts and completions
session_order                the tools skipped and why; a newcomer's first guesses; the whole hand-written session
schema_arguments             arguments for a tool nobody wrote a call for, from its inputSchema
"""
