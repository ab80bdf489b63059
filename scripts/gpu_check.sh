#!/usr/bin/env bash
# Check CommAtlas on a GPU machine from a fresh clone: install what is missing (a CUDA torch that
# matches the driver, or only the pure-Python requirements when the machine's torch fits), run the
# CUDA tests, the self-test, calibrate, check-ddp and the compressor benchmark, and write one JSON
# and one Markdown report. Under 8 minutes on one H200; --quick under 3. Runs with the project's
# .venv/bin/python (made by scripts/setup.sh / app.sh / test.sh) when there is one, else python3
# (3.11+); PYTHON=... picks another.
#
#   bash scripts/gpu_check.sh --quick --out "$OUT"         # on the GPU machine
#   bash scripts/gpu_check.sh --download-wheels .whl       # beforehand, on a machine with a network
#   bash scripts/gpu_check.sh --quick --wheels .whl        # then offline, with those wheels
#
# Options: bash scripts/gpu_check.sh --help. The driver is scripts/gpu_check.py.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
exec "$PYTHON" scripts/gpu_check.py "$@"
