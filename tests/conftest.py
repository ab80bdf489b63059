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


# --- the cuda marker (issue 20): GPU tests run only where torch sees a CUDA device --------------
import pytest  # noqa: E402

NO_CUDA = (
    "needs a CUDA GPU (torch.cuda.is_available() is False); on a GPU machine run "
    "scripts/gpu_check.sh, or pytest -m cuda"
)


def cuda_skip_reason() -> str | None:
    """The one reason every ``cuda`` test is skipped on this machine, or None (CUDA present)."""
    import torch

    return None if torch.cuda.is_available() else NO_CUDA


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip every test marked ``cuda`` (pyproject's markers) when there is no CUDA device."""
    marked = [item for item in items if item.get_closest_marker("cuda") is not None]
    reason = cuda_skip_reason() if marked else None
    if reason:
        skip = pytest.mark.skip(reason=reason)
        for item in marked:
            item.add_marker(skip)
