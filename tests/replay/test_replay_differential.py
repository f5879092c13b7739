"""The replay promise against ground truth: scripts/fuzz_replay.py records random sequences of calls to the real
filesystem server, mutates them, plays each mutant live from the same state and in replay (and hybrid), and
fails on a replay answer that is a result other than the live one. A second kind of fuzzer beside the byte and
schema ones. Run at length (`python scripts/fuzz_replay.py --sequences 200 --parallel-record 0.5 ...`, a few
hundred sequences) it found a read racing a write recorded at the wrong state, a run whose per-run instance
stopped idle recorded under its old history, lanes dropped for room answered as fresh, and a hybrid catch-up
crash; each has a deterministic test of its own (tests/recorder/test_recording_order.py). Here, at six
sequences per layout (about a minute), it guards the promise as a whole; it does not find those at this size."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.conftest import ROOT


def fuzzer():
    spec = importlib.util.spec_from_file_location("fuzz_replay", ROOT / "scripts" / "fuzz_replay.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.real  # starts a registry package (npx server-filesystem)
@pytest.mark.parametrize(
    "layout, seed, options",
    [
        ("isolated", 1, {"hybrid": True, "modern": True}),  # a fresh directory per run; hybrid catch-ups; both eras
        ("shared", 13, {"parallel_record": 0.8}),  # one directory; calls of a round sent at once while recording
    ],
)
def test_replay_answers_what_the_live_server_answers_or_refuses(layout, seed, options):
    report = fuzzer().check_replay(seed, 6, layout, budget=240, batch_size=3, **options)
    assert report.sequences >= 3 and report.refusals > 0 and report.equal > 0
