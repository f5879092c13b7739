#!/usr/bin/env bash
# mcpgw installs beside other projects without shadowing them: its wheel's only top-level name is
# `mcpgw`, so `llm` (the LLM command-line tool) and `runs` (PyPI names our folders also have) keep
# working with mcpgw installed, and after it is uninstalled.
#   usage: scripts/beside_others.sh WHEEL   (makes its own venv in a temporary folder)
set -euo pipefail
wheel=$1
repo=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
python3 -m venv "$scratch/venv"
py="$scratch/venv/bin/python"
"$py" -m pip install --quiet "llm==0.36" runs

others_work() {  # $1: when
    (cd "$scratch" && "$scratch/venv/bin/llm" --version >/dev/null) || { echo "beside: llm --version fails $1" >&2; exit 1; }
    (cd "$scratch" && "$py" -I -c "import llm, runs; from llm import AsyncConversation; runs('true')") \
        || { echo "beside: llm or runs does not import $1" >&2; exit 1; }
}

others_work "before mcpgw is installed"
"$py" -m pip install --quiet -c "$repo/requirements.lock" "$wheel"
others_work "with mcpgw installed"
(cd "$scratch" && "$py" -I -c "
import importlib.metadata as m, sys
tops = {str(f).split('/')[0] for f in m.files('mcpgw')} - {t for t in (str(f).split('/')[0] for f in m.files('mcpgw')) if t.endswith('.dist-info') or t == '..'}
assert tops == {'mcpgw'}, tops
")
# every module imports from site-packages, and a bare `mcpgw serve` from an empty folder replays the
# default cassette carried inside the wheel (scripts/wheel_smoke.py)
mkdir "$scratch/empty"
(cd "$scratch/empty" && "$py" -I "$repo/scripts/wheel_smoke.py")
"$py" -m pip uninstall --quiet -y mcpgw
others_work "after mcpgw is uninstalled"
echo "beside: llm 0.36 and runs work before, with and after mcpgw"
