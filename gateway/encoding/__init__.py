"""How values are read, written and digested: strict JSON-RPC messages, JSON text by encoders made once,
msgpack, result digests and the memo of what is derived from a replayed result. Below: errors.

The face, what other rooms may import: json_messages, json_text, msgpack_packer, result_digest, result_memo.
"""

# Module names, not re-exports: importing the room imports none of them.
__all__ = ["json_messages", "json_text", "msgpack_packer", "result_digest", "result_memo"]
