"""The `local` profile, live: installed with `mcpgw servers install`, served, and each offline
benchmark server answering a real call whose result is worked out by hand here."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from tests.conftest import ROOT, start_gateway, stop_gateway
from tests.lock.helpers import call_in_order

pytestmark = pytest.mark.real


def own_state(tmp_path):
    """The lock's text with the filesystem root moved into this test's folder, so runs (and a user's
    own gateway) never share it; the memory server's file is per run already (${RUN_STATE_DIR})."""
    own = tmp_path / "state" / "fs"
    own.mkdir(parents=True)
    return (ROOT / "servers.lock.yaml").read_text().replace("/tmp/mcpgw-fs", str(own))


def test_local_profile_installs_serves_and_answers(tmp_path):
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpgw.cli",
            "servers",
            "install",
            "--config",
            "servers.lock.yaml",
            "--profile",
            "local",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=1500,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    gateway = start_gateway(tmp_path, own_state(tmp_path), "--profile", "local")
    try:
        states = {name: s["state"] for name, s in gateway.status()["servers"].items()}
        assert len(states) == 10 and set(states.values()) == {"ready"}, gateway.status()

        fahrenheit, bmi, _, determinant, tokyo = call_in_order(
            gateway.url,
            [
                (
                    "unit_converter__convert_temperature",
                    {"value": 100, "from_unit": "celsius", "to_unit": "fahrenheit"},
                ),
                ("medical_calculator__bmi_bsa_calculator", {"weight": 70, "height": 175}),
                ("numpy_mcp__create_matrix", {"shape": [2, 2], "values": [4, 7, 2, 6], "name": "A"}),
                ("numpy_mcp__determinant", {"name": "A"}),
                (
                    "time_mcp__convert_time",
                    {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
                ),
            ],
        )
    finally:
        stop_gateway(gateway)
    assert json.loads(fahrenheit)["converted_value"] == 100 * 9 / 5 + 32
    body = json.loads(bmi)
    assert body["bmi"] == round(70 / 1.75**2, 1)  # 22.9
    assert body["bsa"] == round(math.sqrt(175 * 70 / 3600), 2)  # Mosteller: 1.84
    assert float(determinant.strip('"')) == pytest.approx(4 * 6 - 7 * 2)
    assert json.loads(tokyo)["target"]["datetime"].endswith("21:00:00+09:00")
