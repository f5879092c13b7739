#!/usr/bin/env bash
# Fetch the real MCP servers and clients the tests use into the npm and uv caches,
# each in its own isolated environment (never into the gateway's own venv).
# Python ones compiled to bytecode (CI sets PYTHONDONTWRITEBYTECODE: each start would compile them again).
set -euo pipefail
npm_pkgs=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/server-memory@2026.8.31"
  "@modelcontextprotocol/inspector@0.15.0"
  "@modelcontextprotocol/conformance@0.1.12"  # the official conformance suite (0.1.13+ need Node 22)
)
for pkg in "${npm_pkgs[@]}"; do
  echo "fetching $pkg" >&2
  npm exec --yes --package "$pkg" -- true >/dev/null 2>&1 || npm cache add "$pkg"
done
echo "fetching mcp-server-time==2026.10.19" >&2
UV_COMPILE_BYTECODE=1 uvx --from "mcp-server-time==2026.10.19" mcp-server-time --help >/dev/null
echo "fetching mcp-server-git==2026.10.19" >&2
UV_COMPILE_BYTECODE=1 uvx --from "mcp-server-git==2026.10.19" mcp-server-git --help >/dev/null

# MCP-Bench's own harness (a real client nobody here wrote) runs in a virtual environment of its own, with
# the dependencies it imports pinned (tests/harness/mcpbench-harness.txt); its code comes from the snapshot.
harness_venv=$(python3 "$(dirname "$0")/harness_venv.py")
if [ ! -x "$harness_venv/bin/python" ]; then
  echo "creating MCP-Bench's harness environment in $harness_venv" >&2
  uv venv --quiet --python "$(command -v python3)" "$harness_venv.tmp"
  VIRTUAL_ENV="$harness_venv.tmp" uv pip install --quiet -r "$(dirname "$0")/../tests/harness/mcpbench-harness.txt"
  rm -rf "$harness_venv" && mv "$harness_venv.tmp" "$harness_venv"
fi

# Arize Phoenix (PyPI), the OTLP collector the telemetry tests send traces to and read back, in its own environment.
phoenix_venv=$(python3 "$(dirname "$0")/phoenix_venv.py")
if [ ! -x "$phoenix_venv/bin/phoenix" ]; then
  echo "creating the Arize Phoenix environment in $phoenix_venv" >&2
  uv venv --quiet --python "$(command -v python3)" "$phoenix_venv.tmp"
  VIRTUAL_ENV="$phoenix_venv.tmp" uv pip install --quiet -r "$(dirname "$0")/../tests/telemetry/phoenix.txt"
  rm -rf "$phoenix_venv" && mv "$phoenix_venv.tmp" "$phoenix_venv"
fi

# The lock's registry servers the tests start offline (MCP-Bench's unit_converter, medical_calculator, ...: a
# test runs MCP-Bench's harness against them), into the npm and uv caches, as `mcpgw servers install` fetches
# them for a user. Into a throwaway mcpgw cache: only the package caches are what the tests need warm.
echo "fetching the lock's local profile (mcpgw servers install --profile local)" >&2
scratch_cache=$(mktemp -d)
MCPGW_CACHE="$scratch_cache" python -m mcpgw.cli servers install --config "$(dirname "$0")/../servers.lock.yaml" \
  --profile local >/dev/null
rm -rf "$scratch_cache"
