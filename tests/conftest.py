"""Shared test settings.

Multi-process tests run on CPU with gloo through reference_impls.testing.run_distributed, which
puts a timeout on every collective and always terminates its processes.
"""

from __future__ import annotations

import os

# Keep each spawned rank to one thread: the CI machine has 2 cores and up to 5 ranks.
os.environ.setdefault("OMP_NUM_THREADS", "1")
