"""What the CLI's commands share: consoles for tables, and reading a running gateway's /status.
Below: runtime, encoding, errors.

The face, what other rooms may import: console, status_client.
"""

# Module names, not re-exports: importing the room imports none of them.
__all__ = ["console", "status_client"]
