"""Source entries, built for real: MCP-Bench's Math MCP and Huge Icons (TypeScript, npm ci + tsc),
Bibliomantic and Scientific Computing (Python, each in its own uv environment) and Wikipedia (its own
uv.lock) from the pinned MCP-Bench snapshot beside the clone, with a cold cache; then served with
MCP-Bench's other offline servers, each answering a call whose result is worked out by hand here.

The build runs once per test session (it takes a minute or two) and every test here reuses it.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import httpx
import pytest

from mcpgw.gateway.specs.server_spec import Source
from mcpgw.lock.build import _gist
from mcpgw.lock.config import parse_config
from mcpgw.lock.install_lookup import build_dir, built_info, installed_spec
from mcpgw.lock.sources import SourceError, source_tree
from tests.conftest import BUILT, MISBEHAVING, ROOT, install_servers, start_gateway, stop_gateway
from tests.gateway.test_bad_input import run
from tests.lock.helpers import call_in_order

pytestmark = pytest.mark.real

MCP_BENCH = Source("Accenture/mcp-bench", "09e52332b22428bf891be59047e01cb9adc063b4")
# MCP-Bench's servers that need neither a key nor the network, with their Table 7 tool counts.
OFFLINE_TABLE7 = {
    "math_mcp": 13,
    "bibliomantic": 4,
    "scientific_computing": 26,
    "huge_icons": 3,
    "unit_converter": 16,
    "medical_calculator": 22,
    "time_mcp": 2,
}
# Servers that list their tools offline, though their calls need the network.
LISTS_OFFLINE_TABLE7 = {"wikipedia": 9}
TABLE7 = {**OFFLINE_TABLE7, **LISTS_OFFLINE_TABLE7}


def test_install_builds_source_servers_from_the_snapshot(built_cache):
    config = parse_config((ROOT / "servers.lock.yaml").read_text(), "servers.lock.yaml")
    tools = {}
    for sid in BUILT:
        spec = config.servers[sid]
        info = built_info(spec, built_cache)
        assert info is not None and info["commit"] == MCP_BENCH.commit
        tools[sid] = info["tools"]
        home = build_dir(spec, built_cache)
        assert home.is_relative_to(built_cache) and not home.is_relative_to(ROOT)
    assert tools == {s: TABLE7[s] for s in BUILT}  # Table 7's counts
    # Built in isolation: Bibliomantic has its own interpreter, Math MCP its own node_modules and tsc output.
    biblio = installed_spec(config.servers["bibliomantic"], built_cache)
    assert (
        biblio is not None
        and biblio.command.startswith(str(built_cache))
        and biblio.command.endswith("/env/bin/python")
    )
    math = installed_spec(config.servers["math_mcp"], built_cache)
    assert math is not None and (Path(math.cwd) / "build" / "index.js").exists()
    # Huge Icons is MCP-Bench's 0.1.2 (npm serves only 0.2.2, with 5 tools), Wikipedia its 1.5.4 exactly as
    # its uv.lock pins it (what commands.json's `uv run` runs), not anything re-resolved.
    icons = installed_spec(config.servers["huge_icons"], built_cache)
    assert icons is not None and json.loads((Path(icons.cwd) / "package.json").read_text())["version"] == "0.1.2"
    wiki = build_dir(config.servers["wikipedia"], built_cache) / "env"
    installed = dict(
        p.name.removesuffix(".dist-info").split("-", 1) for p in wiki.glob("lib/python*/site-packages/*.dist-info")
    )
    assert (installed["wikipedia_mcp"], installed["fastmcp"], installed["mcp"]) == ("1.5.4", "2.11.2", "1.12.4")
    # The tree was extracted once into the cache, keyed by the commit, beside the builds.
    assert (built_cache / "trees" / "Accenture+mcp-bench@09e52332b22428bf891be59047e01cb9adc063b4").is_dir()


def test_mcpbench_offline_servers_serve_table7_catalogs_and_answer(built_cache, tmp_path, monkeypatch):
    """Every MCP-Bench server that needs neither a key nor the network: ready with its Table 7
    tool count, each answering one call checked by hand. Beside them, one that lists offline
    (Wikipedia), and one that needs a key (Google Maps: not built here, so not started, key or not)."""
    monkeypatch.setenv("MCPGW_CACHE", str(built_cache))
    monkeypatch.delenv("GOOGLE_MAPS_API_KEY", raising=False)
    registry = [s for s in OFFLINE_TABLE7 if s not in BUILT]
    done = install_servers(built_cache, "--servers", *registry)
    assert done.returncode == 0, done.stdout + done.stderr
    gateway = start_gateway(tmp_path, (ROOT / "servers.lock.yaml").read_text(), "--servers", *TABLE7, "google_maps")
    try:
        assert httpx.get(gateway.base + "/readyz", timeout=5).status_code == 200
        servers = gateway.status()["servers"]
        assert {s: (servers[s]["state"], servers[s]["tools"]) for s in TABLE7} == {
            s: ("ready", n) for s, n in TABLE7.items()
        }, servers
        # Started without its key, as MCP-Bench would; but it is a source entry nobody built here, and says so.
        maps = servers["google_maps"]
        assert maps["state"] == "unavailable" and maps["missing_keys"] == ["GOOGLE_MAPS_API_KEY"]
        assert maps["reason"].startswith("not built: run `mcpgw servers install --servers google_maps`")
        assert servers["math_mcp"]["built_from"].startswith("source Accenture/mcp-bench@09e5233")

        texts = call_in_order(
            gateway.url,
            [
                ("math_mcp__add", {"firstNumber": 2.5, "secondNumber": 4}),
                ("bibliomantic__get_hexagram_details", {"hexagram_number": 1}),
                (
                    "unit_converter__convert_temperature",
                    {"value": 100, "from_unit": "celsius", "to_unit": "fahrenheit"},
                ),
                ("medical_calculator__map_calculator", {"sbp": 120, "dbp": 80}),
                ("huge_icons__get_platform_usage", {"platform": "react"}),
                (
                    "time_mcp__convert_time",
                    {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
                ),
                ("scientific_computing__create_tensor", {"shape": [2, 2], "values": [4, 7, 2, 6], "name": "A"}),
                ("scientific_computing__determinant", {"name": "A"}),
            ],
        )
        answers = dict(zip(["add", "hexagram", "fahrenheit", "map", "react", "tokyo", "tensor", "determinant"], texts))
    finally:
        stop_gateway(gateway)
    assert float(answers["add"]) == 6.5
    # Hexagram 1 is Qian, "The Creative": heaven (trigram \u2630) over heaven.
    assert "Hexagram 1: The Creative" in answers["hexagram"] and "\u2630\u2630" in answers["hexagram"]
    assert json.loads(answers["fahrenheit"])["converted_value"] == 100 * 9 / 5 + 32
    assert "93.3" in answers["map"]  # (120 + 2 * 80) / 3
    react = json.loads(answers["react"])  # from its bundled platform table: no network needed
    assert (react["platform"], react["installation"]["core"]) == ("react", "npm install @hugeicons/react")
    assert json.loads(answers["tokyo"])["target"]["datetime"].endswith("21:00:00+09:00")
    assert float(answers["determinant"].strip('"')) == pytest.approx(4 * 6 - 7 * 2)


def test_a_failed_build_names_server_step_and_output_and_the_rest_go_on(built_cache, tmp_path):
    # A source folder with a build step that fails, in an archive laid out like a code host's.
    commit = "1" * 40
    sources = tmp_path / "sources"
    sources.mkdir()
    _archive(sources / f"someone+broken@{commit}.tar.gz", f"broken-{commit}", {"tool/README": "x"})
    lock = (ROOT / "servers.lock.yaml").read_text()
    broken = (
        f'  broken:\n    source: {{repo: someone/broken, commit: "{commit}", path: tool}}\n'
        '    build: {steps: [["sh", "-c", "echo compiling; echo \'error: no compiler here\' >&2; exit 3"]]}\n'
        '    command: node\n    args: ["index.js"]\n\n'
    )
    config = tmp_path / "lock.yaml"
    config.write_text(lock.replace("servers:\n", "servers:\n" + broken, 1))
    done = install_servers(
        built_cache, "--servers", "broken", "math_mcp", "--sources", str(sources), config=str(config)
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "mcpgw: broken: install failed: step sh -c: exited 3" in done.stderr
    assert "error: no compiler here" in done.stderr  # the step's last output lines
    assert "math_mcp" in done.stdout and "1 installed, 1 failed" in done.stdout  # the other one went on


def test_a_network_server_that_answers_but_cannot_list_offline_is_built_and_says_so(tmp_path):
    """Like OpenAPI Explorer, whose tools/list downloads its API list: with the `network` flag the
    build stands (it started and answered over MCP); without it, the same answer fails the check."""
    commit = "3" * 40
    sources = tmp_path / "sources"
    sources.mkdir()
    _archive(sources / f"someone+lister@{commit}.tar.gz", f"lister-{commit}", {"srv/README": "x"})
    entry = (
        '  {id}:\n    source: {{repo: someone/lister, commit: "{commit}", path: srv}}\n'
        '    build: {{steps: [["true"]]}}\n    command: {python}\n    args: {args}\n{flags}\n'
    )
    args = json.dumps([MISBEHAVING[1], "--list-fails", "fetch failed"])
    entries = "".join(
        entry.format(id=sid, commit=commit, python=json.dumps(MISBEHAVING[0]), args=args, flags=flags)
        for sid, flags in (("online", "    flags: [network]\n"), ("plain", ""))
    )
    config = tmp_path / "lock.yaml"
    config.write_text("version: 1\nservers:\n" + entries)
    done = install_servers(
        tmp_path / "cache", "--servers", "online", "plain", "--sources", str(sources), config=str(config)
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 installed, 1 failed" in done.stdout
    assert "mcpgw: plain: install failed: step verify: built, but it did not answer tools/list" in done.stderr
    assert "mcpgw: online: install failed" not in done.stderr  # installed: no error line for it
    assert "mcpgw: online: installed" in done.stderr
    specs = parse_config(config.read_text(), "lock.yaml").servers
    assert (
        built_info(specs["online"], tmp_path / "cache") is not None
        and built_info(specs["plain"], tmp_path / "cache") is None
    )


def test_sources_dir_is_verified_against_the_commit(tmp_path):
    commit = "2" * 40
    sources = tmp_path / "sources"
    sources.mkdir()
    _archive(sources / f"someone+repo@{commit}.tar.gz", "repo-main", {"a.txt": "a"})  # does not name the commit

    async def go():
        return await source_tree(Source("someone/repo", commit), tmp_path / "cache", [sources])

    with pytest.raises(SourceError, match="does not name commit"):
        run(go)
    # The same archive named by its commit, or a directory of that name, is accepted.
    _archive(sources / f"someone+repo@{commit}.tar.gz", f"repo-{commit}", {"a.txt": "a"})
    tree = run(go)
    assert (tree / "a.txt").read_text() == "a" and json.loads((tree / ".mcpgw-tree.json").read_text())[
        "commit"
    ] == commit


def test_unbuilt_source_entry_is_unavailable_with_the_way_out(tmp_path, monkeypatch):
    monkeypatch.setenv("MCPGW_CACHE", str(tmp_path / "empty-cache"))
    gateway = start_gateway(tmp_path, (ROOT / "servers.lock.yaml").read_text(), "--servers", "math_mcp")
    try:
        info = gateway.server("math_mcp")
    finally:
        stop_gateway(gateway)
    assert info["state"] == "unavailable"
    assert (
        "mcpgw servers install --servers math_mcp" in info["reason"] and "Accenture/mcp-bench@09e5233" in info["reason"]
    )


def _archive(path: Path, top: str, files: dict[str, str]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            member = tarfile.TarInfo(f"{top}/{name}")
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))


def test_npm_404_failures_name_the_missing_package():
    # What `npm ci` ends with for MCP-Bench's Metropolitan Museum (its lock needs redact-pii-light,
    # which npm no longer serves), cut as the install keeps it: its last lines, at most 400 characters.
    tail = (
        "...d resource 'redact-pii-light@https://registry.npmjs.org/redact-pii-light/-/redact-pii-light-1.0.0.tgz'"
        " could not be found or you do not have permission to access it. | npm error 404 | npm error A complete log"
    )
    assert _gist(tail) == "the npm registry has no redact-pii-light@1.0.0 (404)"
    assert (
        _gist("npm error 404  The requested resource '@scope/pkg@2.0.1' could not be found")
        == "the npm registry has no @scope/pkg@2.0.1 (404)"
    )
    assert _gist("error: no compiler here") == "error: no compiler here"  # anything else: the lines as they are
