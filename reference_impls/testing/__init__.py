"""Helpers to run reference implementations on several local processes (gloo)."""

from reference_impls.testing.spawn import DistributedTestError, run_distributed

__all__ = ["DistributedTestError", "run_distributed"]
