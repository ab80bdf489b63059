"""DeepSpeed ZeRO's communication knobs, with DeepSpeed's own defaults (issue 36).

Read in microsoft/DeepSpeed v0.16.5 (commit 38327e0, ``deepspeed/runtime/zero/config.py``
``DeepSpeedZeroConfig``; the same defaults in ``docs/_pages/config-json.md``). Sizes are in
parameter *elements*, as DeepSpeed counts them:

- ``reduce_bucket_size`` (5e8): gradients are copied into a bucket as they are produced and the
  bucket is reduced (reduce-scattered) when it holds this many elements;
- ``allgather_bucket_size`` (5e8): ZeRO-1/2 all-gather the updated weights after the optimizer
  step this many elements at a time;
- ``overlap_comm`` (None: ``True`` for stage 3, ``False`` otherwise, the ``overlap_comm_valid``
  validator): reduce on a side stream during the backward instead of on the compute stream;
- ``contiguous_gradients`` (True): gradients are copied into the contiguous bucket (one bucket
  of ``reduce_bucket_size`` elements, two with ``overlap_comm``: ``stage_1_and_2.py``
  ``backward``, "double buffers to avoid data access conflict");
- ``stage3_prefetch_bucket_size`` (5e7): ZeRO-3 gathers upcoming modules' parameters ahead of
  use, up to this many elements per prefetch (``partitioned_param_coordinator.py``
  ``fetch_sub_module``, one coalesced all-gather per fetch);
- ``stage3_param_persistence_threshold`` (1e5): parameters smaller than this are not
  partitioned (norm weights, biases): never gathered;
- ``stage3_max_live_parameters`` (1e9): gathered parameters resident at once (prefetch stops at
  it);
- ``stage3_max_reuse_distance`` (1e9): a parameter reused within this many fetched elements is
  not released (the last layers' weights stay gathered from forward to backward).
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_ELEMENTS = 10**13  # a bound for the knobs (DeepSpeed accepts any int; 1e13 > any model)


@dataclass(frozen=True)
class DeepSpeedZeroConfig:
    """``zero_optimization``'s communication knobs (module docstring for each default)."""

    reduce_bucket_size: int = 500_000_000
    allgather_bucket_size: int = 500_000_000
    overlap_comm: bool | None = None
    contiguous_gradients: bool = True
    prefetch_bucket_size: int = 50_000_000
    param_persistence_threshold: int = 100_000
    max_live_parameters: int = 1_000_000_000
    max_reuse_distance: int = 1_000_000_000

    def __post_init__(self) -> None:
        for name in ("reduce_bucket_size", "allgather_bucket_size", "prefetch_bucket_size",
                     "param_persistence_threshold", "max_live_parameters",
                     "max_reuse_distance"):  # fmt: skip
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not (
                    0 <= value <= MAX_ELEMENTS):  # fmt: skip
                raise ValueError(f"DeepSpeed {name} must be an integer 0-{MAX_ELEMENTS:.0e} "
                                 f"elements, got {value!r}")  # fmt: skip
        for name in ("reduce_bucket_size", "allgather_bucket_size"):
            if getattr(self, name) == 0:
                raise ValueError(f"DeepSpeed {name} must be at least 1 element")

    def overlaps(self, stage: int) -> bool:
        """Whether gradients are reduced on a side stream (DeepSpeed's stage default)."""
        return self.overlap_comm if self.overlap_comm is not None else stage == 3


DEFAULT_DEEPSPEED = DeepSpeedZeroConfig()
