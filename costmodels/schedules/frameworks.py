"""Documented defaults of the frameworks that run the data-parallel schedules, with their sources.

Each constant is the framework's own default (read from its source at the version named) or the
setting of a named benchmark script; none is fitted to measured iteration times. They are keyword
arguments of :class:`costmodels.dp.predict.Method` (fixed costs in
costmodels.schedules.fixed_costs):

    Method("allreduce", "wfbp", **HOROVOD_0_19)   # Horovod as Shi et al. ran it

Horovod (horovod/horovod, horovod/common/operations.cc, InitializeHorovodOnce):

- v0.15.2 to v0.20.x: ``SetCycleTimeMs(5)`` and a fusion buffer of ``64 * 1024 * 1024`` bytes
  (checked at tags v0.19.0, v0.19.5, v0.20.0 and at commit b5cbf240, the v0.15.2+ commit the
  ByteScheduler PyTorch image patches);
- v0.21.0 and later: ``SetCycleTimeMs(1)`` and ``128 * 1024 * 1024`` bytes.

Shi et al.'s own Horovod runs (HKBU-HPML/ddl-benchmarks, mgwfbp/imagenet_benchmark.py and
mgwfbp/bert_benchmark.py, which run BSP-A2A, WFBP-A2A and MG-WFBP) set
``HOROVOD_FUSION_THRESHOLD=0``, ``HOROVOD_CYCLE_TIME=0`` and ``HOROVOD_CACHE_CAPACITY=0`` before
importing Horovod: Horovod fuses nothing and waits for no cycle, and the groups are the ones the
benchmark's own optimizer (mgwfbp/hv_distributed_optimizer.py) hands it: one group of the whole
model for BSP (threshold 536,870,912 values), one per tensor for WFBP, MG-WFBP's merge plan.
Only ByteScheduler-A2A (bytescheduler/*_benchmark.py) runs Horovod with its defaults.

PyTorch DDP (torch/nn/parallel/distributed.py of torch 2.13, the project's pinned version):
``_DEFAULT_BUCKET_CAP_MB = 25`` (MiB) and, only while bucket_cap_mb is left at its default, a
first bucket of ``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES`` = 1 MiB.

ByteScheduler (bytedance/byteps, branch bytescheduler, bytescheduler/common/bytecore.py) counts
in parameters, not bytes ("Partition unit, i.e., the number of parameters"; "Credit, i.e., the max
number of unacknowledged parameters"; a task's size is its numel, bytetask.py): defaults
``BYTESCHEDULER_PARTITION`` 1,000,000 and ``BYTESCHEDULER_CREDIT`` 4,000,000 values, 4 and 16
MB of fp32 gradients (credit auto-tuning on by default, BYTESCHEDULER_CREDIT_TUNING=1). Shi et
al.'s runs (HKBU-HPML/ddl-benchmarks, bytescheduler/horovod_mpi_cj.sh) set partition 4,000,000 and
credit 16,000,000 values (16 and 64 MB of fp32) with tuning off. The core sends a partition
whenever the credit left is positive and then subtracts its size, so up to one partition more
than the credit can be in flight.

BytePS (bytedance/byteps, byteps/common/global.cc): ``_partition_bytes = 4096000``; worker-side
scheduling credit off unless BYTEPS_SCHEDULING_CREDIT is set (byteps/common/scheduled_queue.cc);
ddl-benchmarks' byteps/launch.sh sets BYTEPS_PARTITION_BYTES=4096000 as well.

Per-message launch costs (``message_overhead_s``) have no documented default; they stay 0 here and
are measured where the project can measure them (``commatlas check-ddp`` times DDP's bucket
handling in the same run).
"""

from __future__ import annotations

from typing import Any

MIB = 2**20

HOROVOD_0_19: dict[str, Any] = {"cycle_time_s": 5e-3, "fusion_threshold_bytes": 64 * MIB}
HOROVOD_UNFUSED: dict[str, Any] = {"cycle_time_s": 0.0, "fusion_threshold_bytes": 0.0}
HOROVOD: dict[str, Any] = {"cycle_time_s": 1e-3, "fusion_threshold_bytes": 128 * MIB}
PYTORCH_DDP: dict[str, Any] = {"fusion_threshold_bytes": 25 * MIB, "first_bucket_bytes": 1 * MIB}
FP32 = 4  # bytes per gradient value: ByteScheduler's sizes are values (docstring)
BYTESCHEDULER: dict[str, Any] = {"partition_bytes": 1_000_000 * FP32,
                                 "credit_bytes": 4_000_000 * FP32}  # fmt: skip
BYTESCHEDULER_SHI: dict[str, Any] = {"partition_bytes": 4_000_000 * FP32,
                                     "credit_bytes": 16_000_000 * FP32}  # fmt: skip
BYTEPS: dict[str, Any] = {"ps_partition_bytes": 4_096_000}

FRAMEWORKS: dict[str, dict[str, Any]] = {
    "none": {},
    "horovod-0.19": HOROVOD_0_19,
    "horovod": HOROVOD,
    "pytorch-ddp": PYTORCH_DDP,
    "bytescheduler": BYTESCHEDULER,
    "byteps": BYTEPS,
}


def framework_defaults(name: str) -> dict[str, Any]:
    """The Method keyword arguments of a framework by name (a key of :data:`FRAMEWORKS`)."""
    try:
        return dict(FRAMEWORKS[name])
    except (KeyError, TypeError):
        raise ValueError(
            f"framework: unknown {name!r}; choose from {', '.join(FRAMEWORKS)}"
        ) from None
