#!/usr/bin/env bash
# Create .venv (Python 3.11+) and install CommAtlas with every extra. Used by app.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# torch is pinned to the CPU build (2.13.0) in pyproject.toml; a bare "torch" pulls a CUDA build.
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[all]'
