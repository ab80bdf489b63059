#!/usr/bin/env bash
# Set up .venv and start the calculator on http://127.0.0.1:8501 (Ctrl-C stops it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/commatlas app --address 127.0.0.1 --port "${PORT:-8501}"
