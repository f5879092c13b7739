"""The gateway served over stdio: the guard on the input stream (malformed lines, ids in flight).
Below: commandline, runtime, encoding, errors.

The face, what other rooms may import: stdio_guard.
"""

# Module names, not re-exports: importing the room imports none of them.
__all__ = ["stdio_guard"]
