#!/usr/bin/env bash
# Type check (issue 42 item 6): mypy, strict on mcpgw.gateway, mcpgw.cassette, mcpgw.recorder and mcpgw.replay
# (settings in pyproject.toml's [tool.mypy]). The folders are subpackages of mcpgw only through
# setup.py's package_dir, which mypy does not read: it checks a temporary tree of symlinks laid out
# as the installed package (mcpgw/ plus mcpgw/gateway -> gateway/, ...).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir "$tree/mcpgw"
ln -s "$repo"/mcpgw/* "$tree/mcpgw/"
for part in gateway cassette recorder replay evaluator llm runs harness lock telemetry; do
    ln -s "$repo/$part" "$tree/mcpgw/$part"
done
cd "$tree"
python -m mypy --config-file "$repo/pyproject.toml" --cache-dir "$repo/.mypy_cache" \
    -p mcpgw.gateway -p mcpgw.cassette -p mcpgw.recorder -p mcpgw.replay "$@"
