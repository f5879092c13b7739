"""Run `mcpgw` under cProfile for bench/profile_gateway.py: SIGUSR2 starts a fresh profile,
SIGUSR1 stops it and writes it to $MCPGW_PROFILE_OUT (so start-up is not in it)."""

import cProfile
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's packages, not an installed copy
from mcpgw.cli import main  # noqa: E402

profile = cProfile.Profile()


def start(*_: object) -> None:
    global profile
    profile = cProfile.Profile(time.process_time)  # CPU, not wall time: the machine is shared
    profile.enable()


def dump(*_: object) -> None:
    profile.disable()
    profile.dump_stats(os.environ["MCPGW_PROFILE_OUT"])


signal.signal(signal.SIGUSR2, start)
signal.signal(signal.SIGUSR1, dump)
sys.exit(main(sys.argv[1:]))
