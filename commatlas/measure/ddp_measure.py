"""What ``commatlas check-ddp`` measures on every rank, and the links it fits from that.

Split from commatlas/measure/check_ddp.py (argument handling and printing stay there): the MLP's
gradient size and the calibration sizes, the measurement of a :class:`MeasuredStep` with every
method's iteration and the calibration trainers and samplers (commatlas/measure/ddp_timing.py,
commatlas/measure/ddp_probes.py), and the profile / reference-ring fits of rank 0.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from commatlas.measure.collectives import size_range
from costmodels.calibration.ddp_methods import COMPRESSORS
from costmodels.calibration.profile import ClusterProfile, LinkFit


def gradient_bytes(widths: list[int]) -> int:
    """fp32 bytes of all weights and biases of the MLP."""
    return 4 * sum(a * b + b for a, b in zip(widths, widths[1:], strict=False))


def calibration_sizes(total_bytes: int) -> list[int]:
    """1 KiB, 4 KiB, ... up to the first power of 4 at or above the gradient bytes, and at
    least 4 MiB: on a noisy host the bandwidth term must stand out of the latency's jitter
    for the fit to find it (at 1 GB/s, 4 MiB take ~4 ms; scheduler jitter is ~1 ms)."""
    high = 4 << 20
    while high < total_bytes:
        high *= 4
    return size_range(1 << 10, high)


def measure_step(
    args: argparse.Namespace, widths: list[int], device: Any, calibrate: bool
) -> tuple[dict[str, float], Any, Any, Any]:
    """Step 2 on every rank: (measured seconds per method, the MeasuredStep without its ring
    fit, the ReferenceRing sampler or None, the QuickCalibration or None)."""
    import torch.distributed as dist

    from commatlas.measure.ddp_probes import EACH, NOOP, RING
    from commatlas.measure.ddp_timing import (
        ExchangeCompute,
        QuickCalibration,
        ReferenceRing,
        max_over_ranks,
        measure_training,
    )
    from costmodels.calibration.ddp_check import MeasuredStep

    methods = list(dict.fromkeys(args.methods))
    sizes = calibration_sizes(gradient_bytes(widths))
    exchange, ring = ExchangeCompute(methods, widths, args.batch_size, device), None
    samplers: list[Any] = [exchange]
    hooked = any(m in COMPRESSORS for m in methods)
    if hooked:
        samplers.append(ring := ReferenceRing(sizes, device))
    probe = contention_probe(widths, args.batch_size, device) if "allreduce" in methods else None
    if probe is not None:
        samplers.append(probe)
    calibration = QuickCalibration(sizes, device) if calibrate else None
    if calibration is not None:
        samplers.append(calibration)
    extra = [NOOP] + ([RING] if hooked else []) + ([EACH] if probe is not None else [])
    measured, forward, backward, gradients = measure_training(
        [*methods, *extra], widths, args.batch_size, args.warmup, args.iters, device,
        args.bucket_cap_mb, samplers,
    )  # fmt: skip
    noop, ring_hook, each_bucket = (measured.pop(NOOP), measured.pop(RING, None),
                                     measured.pop(EACH, None))  # fmt: skip
    compute = exchange.result(args.warmup)
    p = dist.get_world_size()
    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", p))
    contention = None
    if probe is not None:
        contention = probe.result(args.warmup, lambda v: max_over_ranks(v, device))
    step = MeasuredStep(
        p, per_node, forward, backward, tuple(gradients), compute,
        dense=dense_tensors(methods, widths), ddp_overhead_s=max(noop - forward - backward, 0.0),
        ring_hook_s=ring_hook, per_tensor_buckets_s=each_bucket, contention=contention,
    )  # fmt: skip
    return measured, step, ring, calibration


def dense_tensors(methods: list[str], widths: list[int]) -> dict[str, tuple[str, ...]]:
    """Per compression spec, the MLP's tensors its compressor sends uncompressed (the
    compressor's own is_compressed rule, e.g. PowerSGD's for 1-D tensors)."""
    import torch

    from commatlas.measure.ddp_timing import build_mlp
    from reference_impls.compression import get

    shapes = {
        name: p.shape for name, p in build_mlp(widths, torch.device("cpu")).named_parameters()
    }
    dense: dict[str, tuple[str, ...]] = {}
    for method in methods:
        if method in COMPRESSORS:
            record, config, spec = COMPRESSORS[method]
            rule = getattr(get(record, **config), "is_compressed", None)
            if rule is not None:
                dense[spec] = tuple(n for n, shape in shapes.items() if not rule(shape))
    return dense


def contention_probe(widths: list[int], batch_size: int, device: Any) -> Any:
    """ContentionProbe (commatlas/measure/ddp_probes.py) of the whole gradient beside a compute-only
    iteration of the same MLP (its own DDP replica, inside no_sync)."""
    import torch.distributed as dist

    from commatlas.measure.ddp_probes import ContentionProbe
    from commatlas.measure.ddp_timing import Clock, _Trainer, synthetic_batch

    clock = Clock(device)
    trainer = _Trainer("allreduce", widths, device, 25.0)
    batch = synthetic_batch(widths, batch_size, dist.get_rank(), device)
    return ContentionProbe(gradient_bytes(widths), lambda: trainer.step(batch, clock, sync=False),
                           clock, device)  # fmt: skip


def fit_links(
    args: argparse.Namespace, profile: ClusterProfile | None, ring: Any, calibration: Any
) -> tuple[ClusterProfile, LinkFit | None, dict[str, str]]:
    """The profile (given, or fitted in the run), the reference ring's fit, what was not fitted."""
    from costmodels.calibration.profile import fit_alpha_beta, save_profile

    skipped: dict[str, str] = {}
    if calibration is not None:
        profile, skipped = calibration.profile(args.warmup)
        if args.calibration_out:
            save_profile(profile, args.calibration_out)
    assert profile is not None
    ring_fit = None
    if ring is not None:
        try:
            ring_fit = fit_alpha_beta(ring.measurements(args.warmup), "all-reduce")
        except ValueError as exc:  # the hooks are then priced with the profile's links
            skipped["reference ring"] = f"{exc}; the hooks are priced with the profile's links"
    return profile, ring_fit, skipped
