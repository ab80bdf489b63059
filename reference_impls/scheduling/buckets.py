"""The engine shared by tensor fusion and MG-WFBP: pack ready gradients, one all-reduce per bucket.

A subclass decides which ready gradients form a bucket and when it is complete (a byte threshold
for tensor fusion, a merge plan for MG-WFBP); this class does the rest:

1. a post-accumulate hook per parameter reports ``(name, grad)`` to :meth:`_on_ready`;
2. :meth:`_launch_bucket` copies the bucket's gradients into one flat buffer and launches one
   all-reduce for it (the copy is what fusion pays for fewer messages);
3. :meth:`synchronize` lets the subclass launch what is left (:meth:`_flush`), waits, divides by
   p and copies each slice of the buffer back into its ``.grad``.

Every rank must form the same buckets in the same order, which holds because backward makes the
gradients in the same order on every rank (same model, same graph).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

import torch
import torch.distributed as dist

from reference_impls.scheduling.comm import (
    CommRecord,
    Launcher,
    check_launcher,
    launch_recorded,
    trainable,
)

Member = tuple[str, torch.Tensor]  # (parameter name, its gradient)


class BucketedAllReduce(ABC):
    """Gradients packed into buckets, one launcher call per bucket; see the module docstring."""

    def __init__(
        self,
        module: torch.nn.Module,
        group: dist.ProcessGroup | None,
        launch: Launcher,
    ) -> None:
        self._group = group
        self._launch = check_launcher(launch)
        self.parameters = trainable(module)
        self._in_flight: list[tuple[list[Member], torch.Tensor, torch.futures.Future]] = []
        self._seen: set[str] = set()
        self.records: list[CommRecord] = []
        self._handles = [
            param.register_post_accumulate_grad_hook(self._hook_for(name))
            for name, param in self.parameters
        ]

    def _hook_for(self, name: str) -> Callable[[torch.Tensor], None]:
        def hook(param: torch.Tensor) -> None:
            if name in self._seen:
                raise RuntimeError(
                    f"{type(self).__name__}: second gradient of {name!r} before synchronize()"
                )
            self._seen.add(name)
            assert param.grad is not None  # the hook runs after accumulation
            self._on_ready(name, param.grad)

        return hook

    @abstractmethod
    def _on_ready(self, name: str, grad: torch.Tensor) -> None:
        """Add a ready gradient to a bucket; call :meth:`_launch_bucket` when one is complete."""

    @abstractmethod
    def _flush(self) -> None:
        """At :meth:`synchronize`: launch what is still held, or raise if that is impossible."""

    def _launch_bucket(self, members: Sequence[Member]) -> None:
        members = list(members)
        dtypes = {grad.dtype for _, grad in members}
        if len(dtypes) != 1:  # torch.cat would silently promote
            raise ValueError(f"a bucket must hold one dtype, got {sorted(map(str, dtypes))}")
        flat = torch.cat([grad.reshape(-1) for _, grad in members])
        name = "+".join(n for n, _ in members)
        record = CommRecord(name, flat.numel() * flat.element_size(), time.perf_counter())
        self.records.append(record)
        self._in_flight.append(
            (members, flat, launch_recorded(self._launch, flat, self._group, record))
        )

    def synchronize(self) -> list[CommRecord]:
        """Launch what is left, wait, average into every ``.grad``; return this step's log."""
        try:
            self._flush()
        finally:  # even when a bucket cannot be completed, leave no collective behind
            in_flight, self._in_flight, self._seen = self._in_flight, [], set()
            records, self.records = self.records, []
            for _, _, future in in_flight:
                future.wait()
        world = dist.get_world_size(self._group)
        for members, flat, _ in in_flight:
            flat.div_(world)
            offset = 0
            for _, grad in members:
                grad.copy_(flat[offset : offset + grad.numel()].view_as(grad))
                offset += grad.numel()
        return records

    def remove(self) -> None:
        """Remove the hooks (the module then trains without this scheduler)."""
        for handle in self._handles:
            handle.remove()
