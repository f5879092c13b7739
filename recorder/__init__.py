"""Cassette storage: LMDB environments with msgpack values, and the call log."""
