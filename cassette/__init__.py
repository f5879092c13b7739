"""The cassette: one recording, and how it is written and played.

A cassette is one LMDB environment (store, codec) holding exchanges under request keys (keys), with each
lane's history of a server's state (state, lane_table, dropped_lanes, lane_gate); the recorder is the one way
an exchange gets in (recorder, recording_upstream), the player decides what answers a replayed request
(player, lanes, index, equivalence), and misses words every refusal. Where cassettes live (paths, embedded,
on_disk), and what never reaches their bytes (redaction). Modes, miss policies and past-the-end policies are
enums (modes). Imports only the core (gateway/).
"""
