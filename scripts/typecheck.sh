#!/usr/bin/env bash
# Type check (issue 52 item 4): mypy --strict on every package of mcpgw (settings in pyproject.toml's [tool.mypy]).
#
# The folders gateway/, cassette/, ... are subpackages of mcpgw only through setup.py's package_dir. The
# usual editable install maps them with an import hook, which runs code and so is invisible to mypy. Here
# setuptools itself lays the package out as installed: a strict editable install (build/__editable__.*,
# one link per file, made from setup.py's mapping) into a scratch interpreter that sees this venv's
# third-party packages. Our own install stays the usual one, which picks up new files without a reinstall.
# mypy checks `-p mcpgw` there; the paths it reports are turned back into the repository's (gateway/x.py).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

python -m venv --without-pip "$scratch/venv"
site() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
site python > "$(site "$scratch/venv/bin/python")/third_party.pth"
python -m pip --python "$scratch/venv/bin/python" install --quiet --no-deps --disable-pip-version-check \
    -e "$repo" --config-settings editable_mode=strict

# Run outside the repository: from its root, mypy would take ./mcpgw (without the parts) for the package.
cd "$scratch"
python -m mypy --config-file "$repo/pyproject.toml" --cache-dir "$repo/.mypy_cache" \
    --python-executable "$scratch/venv/bin/python" -p mcpgw "$@" \
    | python -c '
import os, sys
repo = sys.argv[1]
for line in sys.stdin:  # "<link in build/__editable__.*>:12: error: ..." -> "gateway/x.py:12: error: ..."
    path, colon, rest = line.partition(":")
    if colon and path.endswith(".py") and os.path.islink(path):
        path = os.path.relpath(os.path.realpath(path), repo)
    sys.stdout.write(path + colon + rest)
' "$repo"
