"""A picture of one recorded run as Arize Phoenix shows it: a cassette's call log sent as traces
(`mcpgw calls export --format otlp`) into a Phoenix started here (its environment: scripts/phoenix_venv.py),
then Phoenix's trace view of one run taken with headless Chromium (Debian's `chromium` package).

    python scripts/phoenix_screenshot.py CASSETTE [--cassettes-dir DIR] [--run RUN_ID] [-o trace.png]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcpgw.cli import main as mcpgw  # noqa: E402
from tests.telemetry.phoenix import Phoenix  # noqa: E402


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise SystemExit("no chromium: apt-get install chromium")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cassette")
    parser.add_argument("--cassettes-dir", default="cassettes")
    parser.add_argument("--run", help="the run to show (default: the first run of the call log)")
    parser.add_argument("-o", "--output", default="phoenix-trace.png")
    parser.add_argument("--size", default="1600,1000", help="window WIDTH,HEIGHT")
    args = parser.parse_args()
    browser = chromium()
    with tempfile.TemporaryDirectory() as work:
        phoenix = Phoenix(Path(work) / "phoenix")
        try:
            more = ["--run", args.run] if args.run else []
            if (
                mcpgw(
                    [
                        "calls",
                        "export",
                        args.cassette,
                        "--cassettes-dir",
                        args.cassettes_dir,
                        "--format",
                        "otlp",
                        "--to",
                        phoenix.url,
                        *more,
                    ]
                )
                != 0
            ):
                return 1
            spans = phoenix.wait_spans(1)
            roots = sorted((s for s in spans if s["parent_id"] is None), key=lambda s: s["start_time"])
            if not roots:
                raise SystemExit("no run in that call log")
            root = next((r for r in roots if r["name"] == f"run {args.run}"), roots[0]) if args.run else roots[0]
            import httpx

            project = next(
                p["id"]
                for p in httpx.get(phoenix.url + "/v1/projects", timeout=10).json()["data"]
                if p["name"] == "default"
            )
            url = f"{phoenix.url}/projects/{project}/traces/{root['context']['trace_id']}"
            output = Path(args.output).resolve()
            subprocess.run(
                [
                    browser,
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--hide-scrollbars",
                    f"--window-size={args.size}",
                    "--virtual-time-budget=20000",
                    f"--screenshot={output}",
                    url,
                ],
                check=True,
                capture_output=True,
                timeout=180,
            )
            children = sum(1 for s in spans if s["context"]["trace_id"] == root["context"]["trace_id"]) - 1
            print(f"{output}: {root['name']} ({children} spans under it) at {url}")
        finally:
            phoenix.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
