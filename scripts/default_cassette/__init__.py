"""Recording cassettes/default and proving it replays offline, behind scripts/record_default_cassette.py:

settings          where things are (the lock, the cassette, the venv's python), time limits, `Failure`
gateway_process   starting `mcpgw serve`, waiting for its servers, stopping it
scratch_world     the workspace and git repository the session works in, rebuilt before recording
playing           playing steps through the SDK client, one observation (result or error) per step
planning          what to play: hand-written calls, generated ones, prompts; the newcomer's reads
outcome_table     the table of outcomes printed after recording; the get-env secrets check
comparing         recorded vs replayed observations, per protocol era
cassette_files    tidying data.mdb (lock file out, compacted) and summarizing what it holds
recording         step 1 and 2: record the session into cassettes/default
verifying         step 3: replay a copy with nothing startable and compare every answer
"""
