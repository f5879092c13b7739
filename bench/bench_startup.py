"""Start-up benchmark: time-to-ready of a profile, all servers at once, against each server alone.

"Ready" is what the gateway means by it: the process started, the MCP
handshake answered and the catalog (tools, resources, prompts) fetched. Every
start goes through the gateway's own code (`LiveUpstream`, one task per server,
all started together, as `mcpgw serve` does). Each measurement is made twice:

  (a) installed: as the gateway starts them after `servers install`: source
      builds and npx / uvx packages run straight from their installed
      environment (no package resolution at start);
  (b) as locked: the lock's own npx / uvx command lines, which resolve the
      package on every start (source builds are the same in both).

Run `mcpgw servers install --config servers.lock.yaml --profile P` first
(with `--sources DIR` for the source entries). Servers that are not ready
(missing key, no network) are listed at the end and left out of the
"slowest single server". Also prints the CPU floor: the CPU every server's start
needs (measured alone) spread over the machine's cores, which no start-up of all
of them together can beat. Prints a table; asserts nothing.

    python bench/bench_startup.py [--config servers.lock.yaml] [--profile local] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcpgw.lock.config import ServerSpec, load_config  # noqa: E402
from mcpgw.lock.installer import make_plan  # noqa: E402
from mcpgw.lock.probe import Probe, probe_servers  # noqa: E402

MODES = {"a": {}, "b": {"MCPGW_NO_DIRECT": "1"}}
LABELS = {"a": "installed", "b": "as locked"}


def set_mode(mode: str) -> None:
    os.environ.pop("MCPGW_NO_DIRECT", None)
    os.environ.update(MODES[mode])


async def together(specs: list[ServerSpec], timeout: float) -> tuple[float, list[Probe]]:
    probes = await probe_servers(specs, timeout=timeout)
    # the wall time until the last one is ready (closing them afterwards is not start-up);
    # servers that cannot be ready here (a key or the network missing) do not count
    ready = [p.seconds for p in probes if p.ready] or [p.seconds for p in probes]
    return max(ready), probes


def cpu_seconds() -> float:
    """CPU used so far by this process and its finished children (a probed server is reaped
    when its probe closes it, so its start-up CPU is in here after `alone`)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


async def alone(spec: ServerSpec, timeout: float) -> Probe:
    return (await probe_servers([spec], timeout=timeout))[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=str(ROOT / "servers.lock.yaml"))
    parser.add_argument("--profile", default="local")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement; the median is shown")
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--no-warmup", action="store_true", help="skip the untimed start of everything first")
    args = parser.parse_args()

    specs = load_config(args.config).select(args.profile)
    for spec in specs:
        for directory in make_plan(spec).dirs:
            Path(directory).mkdir(parents=True, exist_ok=True)
    print(
        f"profile {args.profile!r} of {args.config}: {len(specs)} servers; {os.cpu_count()} cores; "
        f"median of {args.repeat} run(s)",
        flush=True,
    )
    if not args.no_warmup:
        set_mode("a")
        anyio.run(together, specs, args.timeout)

    all_ready: dict[str, list[float]] = {m: [] for m in MODES}
    in_group: dict[str, dict[str, list[float]]] = {m: {s.id: [] for s in specs} for m in MODES}
    single: dict[str, dict[str, list[float]]] = {m: {s.id: [] for s in specs} for m in MODES}
    single_cpu: dict[str, dict[str, list[float]]] = {m: {s.id: [] for s in specs} for m in MODES}
    failures: dict[str, str] = {}
    for run in range(args.repeat):
        for mode in MODES:
            set_mode(mode)
            wall, probes = anyio.run(together, specs, args.timeout)
            all_ready[mode].append(wall)
            for probe in probes:
                in_group[mode][probe.spec.id].append(probe.seconds)
                if not probe.ready:
                    failures[probe.spec.id] = f"({LABELS[mode]}, together) {probe.state}: {probe.reason}"
            for spec in specs:
                cpu_before = cpu_seconds()
                probe = anyio.run(alone, spec, args.timeout)
                single_cpu[mode][spec.id].append(cpu_seconds() - cpu_before)
                single[mode][spec.id].append(probe.seconds)
                if not probe.ready:
                    failures[spec.id] = f"({LABELS[mode]}, alone) {probe.state}: {probe.reason}"
            print(f"  run {run + 1}, {LABELS[mode]}: all ready after {wall:.2f}s", flush=True)
    set_mode("a")

    med = statistics.median
    print()
    print(f"{'server':<24}{'alone (a)':>11}{'alone (b)':>11}{'together (a)':>14}{'together (b)':>14}")
    for spec in specs:
        print(
            f"{spec.id:<24}{med(single['a'][spec.id]):>10.2f}s{med(single['b'][spec.id]):>10.2f}s"
            f"{med(in_group['a'][spec.id]):>13.2f}s{med(in_group['b'][spec.id]):>13.2f}s"
        )
    print()
    for mode in MODES:
        counted = [s for s in specs if s.id not in failures] or specs
        slowest_id = max(counted, key=lambda s: med(single[mode][s.id])).id
        slowest = med(single[mode][slowest_id])
        total = sum(med(single[mode][s.id]) for s in counted)
        every = med(all_ready[mode])
        print(
            f"({mode}) {LABELS[mode]:<10} all ready together: {every:.2f}s   slowest single ready "
            f"server: {slowest_id} {slowest:.2f}s   ratio {every / slowest:.2f}x (target <= 1.5x)   "
            f"one after another: {total:.2f}s"
        )
        # Started together, the servers share the cores: all of them cannot be ready before the
        # CPU their starts need, spread over every core, has been spent.
        cpu = sum(med(single_cpu[mode][s.id]) for s in counted)
        floor = max(cpu / (os.cpu_count() or 1), slowest)
        print(
            f"    CPU to ready, each alone (server, its launcher and the gateway's side): {cpu:.2f}s in all; "
            f"on {os.cpu_count()} cores no start-up together can beat {floor:.2f}s: together took {every / floor:.2f}x that"
        )
    for sid, reason in failures.items():
        print(f"not ready: {sid} {reason}")


if __name__ == "__main__":
    main()
