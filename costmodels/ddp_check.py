"""Predict a measured PyTorch DDP iteration from its own compute times and a cluster profile.

``commatlas check-ddp`` measures, on the cluster, everything a prediction needs except the
network, and this module turns that into a predicted iteration time per method, so the
prediction can be held against the measured one. Inputs (:class:`MeasuredStep`, seconds, the
maximum over ranks of each rank's median):

- ``forward_s``: forward, loss and optimizer step with no communication (DDP ``no_sync``); the
  step is counted with the forward because, like it, it waits for every gradient;
- ``backward_s`` and each gradient's ready time from the start of backward (post-accumulate-grad
  hooks), in ready order;
- per compressed method and tensor, the seconds its exchange takes on a group of one rank: the
  compression, decompression and copies of the DDP hook without any message;
- ``reference_ring``: an alpha-beta fit (costmodels.profile.fit_alpha_beta) of
  reference_impls' ring all-reduce timed in the same run, the collective the hooks run.

Prediction, per method, with the links of a :class:`~costmodels.profile.ClusterProfile`:

- DDP's default all-reduce (S. Li et al., "PyTorch Distributed: Experiences on Accelerating
  Data Parallel Training", PVLDB 13(12), 2020): buckets of ``bucket_cap`` bytes filled in ready
  order, each all-reduced as soon as its last gradient is ready, overlapping the rest of
  backward: schedule ``fusion`` (costmodels.schedules) with ``message_seconds`` of
  costmodels.predict, i.e. the ring all-reduce cost model 2(p-1) alpha + 2(p-1)/p n / B on the
  profile's levels (costmodels.profile_links), which for one node is the fitted all-reduce;
- a compressor registered as a DDP communication hook: the reference compressors exchange
  synchronously inside the hook, on backward's own thread, so nothing overlaps: every tensor
  counts as ready at the end of backward and the schedule ``wfbp`` sends them one by one,
  T = F + B + sum_i (c_i + x_i). c_i is the communication part of the spec's cost model
  (costmodels.compression_exchange.exchange_time, e.g. top-k: (p-1)(alpha + k (w_v + w_i) / B))
  with the alpha and B of ``reference_ring``, and x_i the measured one-rank exchange of that
  tensor, which replaces the cost model's H200 kernel times. The hooks send through Python
  rings of isend/irecv, which pay several times the backend's own all-reduce per step (on gloo
  over loopback about 2-4x): pricing them with the profile's fit of that all-reduce would
  charge the cost model with the implementation's overhead. Without ``reference_ring`` the
  profile's links are used, as ``message_seconds`` prices compressed exchanges.

What the cost models leave out shows up as error: per-call Python and hook overhead, the
gradient copies DDP makes around a hook, and contention between ranks sharing cores. (A payload
of several parts, such as top-k's values and indices, travels packed in one ring all-gather, so
it pays the (p-1) alpha its model counts.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import mean
from typing import Any

from costmodels.compression_exchange import exchange_time
from costmodels.gradients import Gradient
from costmodels.predict import Method, message_seconds
from costmodels.profile import ClusterProfile, LinkFit
from costmodels.profile_links import cluster_from_profile
from costmodels.schedules import IterationResult, simulate

# check-ddp's methods: DDP's own all-reduce, and reference compressors as DDP hooks, each
# method -> (compressor record id, its config, the compression spec of its cost model). The
# spec must describe the same compressor: top-k ratio = density, QSGD levels 7 = 4 bits
# (sign + 3 level bits), PowerSGD rank r = "powersgd:r".
COMPRESSORS: dict[str, tuple[str, dict[str, Any], str]] = {
    "fp16": ("fp16-comm", {}, "fp16"),
    "topk": ("topk-sparsification", {"ratio": 0.01}, "topk:0.01"),
    "qsgd": ("qsgd", {"levels": 7}, "qsgd:4"),
    "powersgd": ("powersgd", {"rank": 2}, "powersgd:2"),
}
METHODS = ("allreduce", *COMPRESSORS)


@dataclass(frozen=True)
class MeasuredStep:
    """One iteration's compute as ``commatlas check-ddp`` measured it (seconds, SI)."""

    world_size: int
    ranks_per_node: int
    forward_s: float  # forward + loss + optimizer step, no communication
    backward_s: float  # backward, no communication
    gradients: tuple[Gradient, ...]  # fp32 bytes and ready time from the start of backward
    exchange_compute_s: dict[str, dict[str, float]] = field(default_factory=dict)  # spec -> name
    reference_ring: LinkFit | None = None  # the hooks' collective, fitted in the same run

    def __post_init__(self) -> None:
        if self.world_size < 1 or self.ranks_per_node < 1:
            raise ValueError("world_size and ranks_per_node must be >= 1")
        if self.world_size % self.ranks_per_node:
            raise ValueError(
                f"world_size {self.world_size} is not a multiple of ranks_per_node "
                f"{self.ranks_per_node}"
            )
        for name in ("forward_s", "backward_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be finite and >= 0, got {value!r}")

    @property
    def nodes(self) -> int:
        return self.world_size // self.ranks_per_node

    def as_json(self) -> dict[str, Any]:
        """Plain JSON types; :meth:`from_json` reads them back equal."""
        ring = self.reference_ring
        return {
            "world_size": self.world_size,
            "ranks_per_node": self.ranks_per_node,
            "forward_s": self.forward_s,
            "backward_s": self.backward_s,
            "gradients": [
                {"name": g.name, "bytes": g.bytes, "ready_s": g.ready_s} for g in self.gradients
            ],
            "exchange_compute_s": self.exchange_compute_s,
            "reference_ring": None if ring is None else ring.model_dump(mode="json"),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MeasuredStep:
        ring = data.get("reference_ring")
        return cls(
            world_size=int(data["world_size"]),
            ranks_per_node=int(data["ranks_per_node"]),
            forward_s=float(data["forward_s"]),
            backward_s=float(data["backward_s"]),
            gradients=tuple(
                Gradient(g["name"], float(g["bytes"]), float(g["ready_s"]))
                for g in data["gradients"]
            ),
            exchange_compute_s={
                spec: {name: float(s) for name, s in times.items()}
                for spec, times in data.get("exchange_compute_s", {}).items()
            },
            reference_ring=None if ring is None else LinkFit.model_validate(ring),
        )


def predict_allreduce(
    step: MeasuredStep, profile: ClusterProfile, bucket_cap_bytes: float
) -> IterationResult:
    """DDP's own bucketed all-reduce, overlapped with backward (module docstring)."""
    cluster = cluster_from_profile(profile, step.nodes, step.ranks_per_node)
    method = Method("allreduce", "fusion", "ring", fusion_threshold_bytes=bucket_cap_bytes)
    return simulate(
        method.schedule,
        step.gradients,
        step.forward_s,
        step.backward_s,
        lambda nbytes: message_seconds(method, cluster, nbytes),
        **method.schedule_options(),
    )


def predict_hook(step: MeasuredStep, profile: ClusterProfile, spec: str) -> IterationResult:
    """A compressor as a blocking DDP hook: per-tensor exchanges after backward (docstring)."""
    values = cluster_from_profile(profile, step.nodes, step.ranks_per_node).values()
    if step.reference_ring is not None:
        ring = step.reference_ring
        values = dict(values, alpha=ring.alpha_s, beta=ring.beta_s_per_byte)
    compute = step.exchange_compute_s.get(spec)
    missing = [g.name for g in step.gradients if compute is None or g.name not in compute]
    if missing:
        raise ValueError(f"no measured exchange compute for {spec!r} of tensor(s) {missing}")
    # The schedule hands comm a message size only; tensors of one size share their mean.
    by_size: dict[float, list[float]] = {}
    for g in step.gradients:
        by_size.setdefault(g.bytes, []).append(compute[g.name])  # type: ignore[index]
    local = {size: mean(times) for size, times in by_size.items()}

    def comm(nbytes: float) -> float:
        if nbytes <= 0:
            return local.get(nbytes, 0.0)
        wire, _ = exchange_time(
            spec, nbytes, step.world_size, values["alpha"], values["beta"], values["gamma"]
        )
        return wire + local[nbytes]

    serial = [Gradient(g.name, g.bytes, step.backward_s) for g in step.gradients]
    return simulate("wfbp", serial, step.forward_s, step.backward_s, comm)


def predict_methods(
    step: MeasuredStep,
    profile: ClusterProfile,
    specs: Mapping[str, str],
    bucket_cap_bytes: float,
) -> dict[str, float]:
    """Predicted iteration seconds per method; ``specs`` maps a method name to its compression
    spec ("none" is DDP's default all-reduce)."""
    return {
        name: (
            predict_allreduce(step, profile, bucket_cap_bytes)
            if spec == "none"
            else predict_hook(step, profile, spec)
        ).iteration_time_s
        for name, spec in specs.items()
    }
