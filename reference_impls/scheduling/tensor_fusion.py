"""Tensor fusion: gradients packed in ready order into buckets up to a byte threshold.

Paper: A. Sergeev and M. Del Balso, "Horovod: fast and easy distributed deep learning in
TensorFlow", arXiv 1802.05799, 2018 (the fusion buffer and its ``HOROVOD_FUSION_THRESHOLD``
are described in Horovod's tensor-fusion documentation; PyTorch DDP's ``bucket_cap_mb`` buckets
follow the same idea).

Algorithm (one iteration, p ranks):

1. Gradients join the open bucket in the order backward makes them.
2. Once the bucket holds at least ``threshold_bytes``, it is closed: its gradients are copied
   into one flat buffer and one all-reduce is launched for it, while backward goes on. A
   gradient of another dtype first closes the open bucket (a buffer has one dtype).
3. ``synchronize()`` launches the last, partial bucket, waits for all, divides by p and copies
   the averages back into each ``.grad``.

This is the rule of ``costmodels.schedules.fusion.buckets`` (threshold 0: one bucket per
tensor, i.e. WFBP; an infinite threshold: one bucket after backward, i.e. BSP). Simplifications:
Horovod fuses whatever is ready every cycle (a few ms); here a bucket closes on its size only.

Communication cost: one all-reduce per bucket, B_k bytes each: the same bytes as all-reducing
every tensor separately (a ring sends 2(p-1)/p * B_k per rank) but one latency per bucket
instead of one per tensor, plus two local copies of every gradient.

Example::

    fusion = TensorFusion(model, threshold_bytes=64 * 2**20)
    loss.backward()
    fusion.synchronize()
    optimizer.step()
"""

from __future__ import annotations

import math
import numbers

import torch
import torch.distributed as dist

from reference_impls.registry import reference_impl
from reference_impls.scheduling.buckets import BucketedAllReduce, Member
from reference_impls.scheduling.comm import Launcher, torch_allreduce


@reference_impl
class TensorFusion(BucketedAllReduce):
    """Close a bucket once it holds ``threshold_bytes`` (>= 0, ``math.inf`` allowed)."""

    def __init__(
        self,
        module: torch.nn.Module,
        threshold_bytes: float,
        group: dist.ProcessGroup | None = None,
        launch: Launcher = torch_allreduce,
    ) -> None:
        if (
            isinstance(threshold_bytes, bool)
            or not isinstance(threshold_bytes, numbers.Real)
            or math.isnan(threshold_bytes)
            or threshold_bytes < 0
        ):
            raise ValueError(f"threshold_bytes must be a number >= 0, got {threshold_bytes!r}")
        self.threshold_bytes = float(threshold_bytes)
        self._open: list[Member] = []
        self._open_bytes = 0
        super().__init__(module, group, launch)

    def _on_ready(self, name: str, grad: torch.Tensor) -> None:
        if self._open and self._open[0][1].dtype != grad.dtype:
            self._close()
        self._open.append((name, grad))
        self._open_bytes += grad.numel() * grad.element_size()
        if self._open_bytes >= self.threshold_bytes:
            self._close()

    def _close(self) -> None:
        self._launch_bucket(self._open)
        self._open, self._open_bytes = [], 0

    def _flush(self) -> None:
        if self._open:
            self._close()
