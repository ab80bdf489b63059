"""Shared test settings.

Multi-process tests run on CPU with gloo through reference_impls.testing.run_distributed, which
puts a timeout on every collective and always terminates its processes.
"""

from __future__ import annotations

import os

# Keep each spawned rank to one thread: the CI machine has 2 cores and up to 5 ranks.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from hypothesis import settings  # noqa: E402

# Property tests draw the same examples on every run (CI included), so a pass here is a pass
# there. To explore new examples, set derandomize=False in a local run.
settings.register_profile("commatlas", derandomize=True, deadline=None, database=None)
settings.load_profile("commatlas")
