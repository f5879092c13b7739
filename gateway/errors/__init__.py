"""The gateway's errors, in one tree (tree), and the answers the HTTP layers send themselves (http_errors).
Imports nothing else of the gateway.

The face, what other rooms may import: http_errors, tree.
"""

# Module names, not re-exports: importing the room imports none of them.
__all__ = ["http_errors", "tree"]
