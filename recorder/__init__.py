"""The call log: one record per tools/call (calllog), and the call log of each replay session kept with the cassette it plays (replay_logs)."""
