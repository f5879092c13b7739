"""Stands where a harness expects to start a server process: waits, harmlessly, until it is stopped.

MCP-Bench starts an HTTP entry's `cmd`, checks after 3 s that it is still running, then talks to
`http://localhost:<port><endpoint>` (here the gateway) and kills the process when done."""

import signal
import sys


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
