"""Calibrations ``commatlas check-ddp`` times in the same rounds as the training it predicts.

Three fixed costs of running communication *inside* a DDP iteration are not visible to a
collective timed alone after a barrier, and on a busy host they are large; each is measured here
on the run's own machine and load, never typed in (costmodels/calibration/ddp_check.py uses them):

1. DDP's bucket handling (copying gradients into the flat bucket, calling the hook, the future,
   copying back): a DDP trainer whose comm hook returns the bucket untouched
   (:func:`noop_hook`); its iteration minus the compute-only iteration, per bucket, is the
   per-message cost ``message_s`` of the fusion schedule.
2. The latency of one step of a collective when it runs inside backward: a DDP trainer whose
   hook ring-all-reduces every parameter's fp32 gradient with the reference ring
   (:func:`ring_hook`, the compressors' pattern without compression), and DDP's own all-reduce
   with one bucket per parameter (``EACH``: the default's mechanism at another message count
   than the buckets being predicted). Ranks reach each step at different times and block, so a
   step costs a wake-up on top of the wire; after a barrier both ranks are already running and
   the step is several times cheaper.
3. How communication shares the host with compute (:class:`ContentionProbe`): an asynchronous
   all-reduce of the whole gradient started with a compute-only iteration, against each alone.
   On a GPU with its own NIC the two overlap; with one CPU core per rank they cannot, and the
   collective's worker thread even slows down beside the compute.
"""

# No "from __future__ import annotations": DDP checks the hooks' annotations at run time.

import statistics
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist

from reference_impls.collectives import ring_allreduce

NOOP, RING, EACH = "_noop", "_ring", "_each"  # calibration trainers beside the methods
EACH_BUCKET_MB = 1e-9  # a bucket cap below any tensor: DDP gives every parameter its own bucket


def noop_hook(state: Any, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """A DDP comm hook that communicates nothing: DDP's own bucket handling alone."""
    future: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


def ring_hook(state: Any, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """A DDP comm hook averaging each parameter's gradient with reference_impls' ring, one
    parameter at a time (the per-parameter pattern of the compressors' hooks, uncompressed)."""
    buffer = bucket.buffer()
    views = buffer.split([p.numel() for p in bucket.parameters()])
    for view in views:
        ring_allreduce(view)
    buffer.div_(dist.get_world_size())
    future: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    future.set_result(buffer)
    return future


CALIBRATION_HOOKS: dict[str, Callable[..., Any]] = {NOOP: noop_hook, RING: ring_hook}


class ContentionProbe:
    """A sampler: per call, (a) a blocking all-reduce of ``nbytes`` alone, (b) ``compute()``
    alone and (c) the same all-reduce started asynchronously just before ``compute()``; each
    after a barrier, timed on the host clock (``clock`` marks CUDA events on GPUs)."""

    def __init__(self, nbytes: int, compute: Callable[[], None], clock: Any, device: Any) -> None:
        p = dist.get_world_size()
        self.buffer = torch.ones(max(nbytes // (4 * p), 1) * p, device=device)
        self.compute, self.clock, self.device = compute, clock, device
        self.samples: list[tuple[float, float, float]] = []

    def _timed(self, action: Callable[[], None]) -> float:
        self.buffer.fill_(1.0)
        dist.barrier()
        start = self.clock.mark()
        action()
        end = self.clock.mark()
        self.clock.sync()
        return self.clock.seconds(start, end)

    def _together(self) -> None:
        work = dist.all_reduce(self.buffer, async_op=True)
        self.compute()
        work.wait()

    def __call__(self) -> None:
        alone = self._timed(lambda: dist.all_reduce(self.buffer))
        compute = self._timed(self.compute)
        together = self._timed(self._together)
        self.samples.append((alone, compute, together))

    def result(self, skip: int, reduce_max: Callable[[list[float]], list[float]]) -> dict:
        """Medians after ``skip`` calls, maximum over ranks (``reduce_max``), with the bytes."""
        kept = self.samples[skip:]
        medians = [statistics.median(s[i] for s in kept) for i in range(3)]
        alone, compute, together = reduce_max(medians)
        return {"bytes": float(self.buffer.numel() * 4), "alone_s": alone, "compute_s": compute,
                "together_s": together}  # fmt: skip


def gradient_buffer_bytes(sizes: Sequence[int]) -> int:
    """Bytes of all gradients together (the probe's message)."""
    return int(sum(sizes))
