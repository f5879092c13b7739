"""Run `mcpgw` under cProfile; SIGUSR1 writes the profile to $MCPGW_PROFILE_OUT (bench/profile_gateway.py)."""

import cProfile
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's packages, not an installed copy
from mcpgw.cli import main  # noqa: E402

profile = cProfile.Profile()


def dump(*_: object) -> None:
    profile.disable()
    profile.dump_stats(os.environ["MCPGW_PROFILE_OUT"])


signal.signal(signal.SIGUSR1, dump)
profile.enable()
sys.exit(main(sys.argv[1:]))
