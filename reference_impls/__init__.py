"""Minimal PyTorch reference implementations, one method per file, grouped by family.

Every implementation sends through :mod:`reference_impls.comm.wire`, which counts bytes per rank,
and runs unchanged on CPU (gloo) and CUDA (NCCL) tensors under ``torchrun``.
"""
