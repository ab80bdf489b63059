#!/usr/bin/env bash
# Check CommAtlas on a GPU machine from a fresh clone: install what is missing (a CUDA torch that
# matches the driver, or only the pure-Python requirements when the machine's torch fits), run the
# CUDA tests, the self-test, calibrate, check-ddp and the compressor benchmark, and write one JSON
# and one Markdown report. Under 8 minutes on one H200; --quick under 3. Needs python3 (3.11+).
#
#   bash scripts/gpu_check.sh --quick --out "$OUT"         # on the GPU machine
#   bash scripts/gpu_check.sh --download-wheels .whl       # beforehand, on a machine with a network
#   bash scripts/gpu_check.sh --quick --wheels .whl        # then offline, with those wheels
#
# Options: bash scripts/gpu_check.sh --help. The driver is scripts/gpu_check.py.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
exec "$PYTHON" scripts/gpu_check.py "$@"
