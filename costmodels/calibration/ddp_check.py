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
- ``reference_ring``: an alpha-beta fit (costmodels.calibration.profile.fit_alpha_beta) of
  reference_impls' ring all-reduce timed in the same run, the collective the hooks run;
- the fixed costs of communicating inside a DDP iteration, timed in the same rounds by the
  calibration trainers of commatlas/measure/ddp_probes.py: ``ddp_overhead_s`` (DDP's bucket
  handling: a hook that sends nothing, minus compute), ``ring_hook_s`` (every gradient
  ring-all-reduced by the reference ring inside a hook), ``per_tensor_buckets_s`` (DDP's own
  all-reduce with one bucket per tensor), ``contention`` (an all-reduce alone, compute alone,
  both together) and ``dense`` (tensors a compressor sends uncompressed, by its own rule).

Prediction, per method, with the links of a :class:`~costmodels.calibration.profile.ClusterProfile`:

- DDP's default all-reduce (S. Li et al., "PyTorch Distributed: Experiences on Accelerating
  Data Parallel Training", PVLDB 13(12), 2020): buckets of ``bucket_cap`` bytes filled in ready
  order, each all-reduced as soon as its last gradient is ready, overlapping the rest of
  backward: schedule ``fusion`` (costmodels.schedules) with ``message_seconds`` of
  costmodels.dp.predict, i.e. the ring all-reduce cost model 2(p-1) alpha + 2(p-1)/p n / B with
  the profile's B (costmodels.calibration.profile_links). Fixed costs of the run: ``message_s`` =
  DDP's
  bucket handling per bucket; ``overlap`` and a slowdown of every message from the contention
  probe (:func:`contention`); and alpha refitted so that the same model reproduces the
  per-tensor-bucket run (:func:`ddp_alpha`: the latency a collective meets inside backward,
  wake-ups of blocked ranks included, which a collective timed after a barrier does not see;
  on the loaded 2-core test host it is 2-5x the barrier's).
- a compressor registered as a DDP communication hook: the reference compressors exchange
  synchronously inside the hook, on backward's own thread, so nothing overlaps: every tensor
  counts as ready at the end of backward and the schedule ``wfbp`` sends them one by one,
  T = F + B + DDP's bucket handling + sum_i (c_i + x_i). c_i is the communication part of the
  spec's cost model (costmodels.dp.compression_exchange.exchange_time, e.g. top-k:
  (p-1)(alpha + k (w_v + w_i) / B); a tensor in ``dense`` pays a plain ring all-reduce) with B
  of ``reference_ring`` and alpha from the ring-hook run (:func:`hook_alpha`; else the reference
  ring's), and x_i the measured one-rank exchange of that tensor, which replaces the cost
  model's H200 kernel times. The hooks send through Python rings of isend/irecv, which pay
  several times the backend's own all-reduce per step: pricing them with the profile's fit of
  that all-reduce would charge the cost model with the implementation's overhead. Without
  ``reference_ring`` the profile's links are used, as ``message_seconds`` prices compressed
  exchanges.

What the models still leave out shows up as error: the decompressions of the other ranks'
payloads an all-gather hook adds (timed on one rank, the hook decompresses one), and the round-
to-round variation of a busy host, which no constant follows. (A payload of several parts, such
as top-k's values and indices, travels packed in one ring all-gather, so it pays the (p-1) alpha
its model counts.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from statistics import mean
from typing import Any

from costmodels.calibration.profile import ClusterProfile, LinkFit
from costmodels.calibration.profile_links import cluster_from_profile
from costmodels.dp.compression_exchange import exchange_time
from costmodels.dp.predict import Cluster, Method, message_seconds
from costmodels.gradients import Gradient
from costmodels.schedules import IterationResult, simulate
from costmodels.schedules.fixed_costs import FixedCosts
from costmodels.schedules.fusion import buckets

# check-ddp's methods and their compressors: costmodels/calibration/ddp_methods.py


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
    # Fixed costs measured in the same rounds (commatlas/measure/ddp_probes.py); None/0: not
    # measured.
    ddp_overhead_s: float = 0.0  # DDP's bucket handling per iteration (no-op hook - compute)
    ring_hook_s: float | None = None  # iteration with every gradient ring-all-reduced in a hook
    per_tensor_buckets_s: float | None = None  # DDP's all-reduce with one bucket per tensor
    contention: dict[str, float] | None = None  # bytes, alone_s, compute_s, together_s
    dense: dict[str, tuple[str, ...]] = field(default_factory=dict)  # spec -> tensors sent dense

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
            "ddp_overhead_s": self.ddp_overhead_s,
            "ring_hook_s": self.ring_hook_s,
            "per_tensor_buckets_s": self.per_tensor_buckets_s,
            "contention": self.contention,
            "dense": {spec: list(names) for spec, names in self.dense.items()},
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
            ddp_overhead_s=float(data.get("ddp_overhead_s", 0.0)),
            ring_hook_s=_optional(data, "ring_hook_s"),
            per_tensor_buckets_s=_optional(data, "per_tensor_buckets_s"),
            dense={spec: tuple(names) for spec, names in data.get("dense", {}).items()},
            contention=None if data.get("contention") is None else {
                key: float(value) for key, value in data["contention"].items()
            },
        )  # fmt: skip


def _optional(data: Mapping[str, Any], key: str) -> float | None:
    return None if data.get(key) is None else float(data[key])


def contention(step: MeasuredStep) -> tuple[float, float]:
    """(overlap, slowdown) of communication beside compute, from the run's ContentionProbe.

    The probe started an all-reduce of c seconds (alone) with W seconds of compute and the
    pair took T. Under the fusion schedule's model (the stream runs at ``overlap`` of its speed
    while compute runs) T - W = c - overlap * W, so overlap = (c - (T - W)) / W in [0, 1]; when
    T - W exceeds c the collective even slowed down beside the compute (a worker thread sharing
    the rank's core) and every message is charged slowdown = (T - W) / c. Without a probe: (1, 1).
    """
    probe = step.contention
    if not probe or not probe["alone_s"] > 0 or not probe["compute_s"] > 0:
        return 1.0, 1.0
    extra = max(probe["together_s"] - probe["compute_s"], 0.0)
    overlap = min(max((probe["alone_s"] - extra) / probe["compute_s"], 0.0), 1.0)
    return overlap, max(extra / probe["alone_s"], 1.0)


def predict_allreduce(
    step: MeasuredStep, profile: ClusterProfile, bucket_cap_bytes: float
) -> IterationResult:
    """DDP's own bucketed all-reduce (module docstring) with the run's fixed costs: DDP's bucket
    handling per bucket, and the overlap and slowdown of :func:`contention`."""
    cluster = cluster_from_profile(profile, step.nodes, step.ranks_per_node)
    per_bucket = step.ddp_overhead_s / (len(buckets(list(step.gradients), bucket_cap_bytes)) or 1)
    if step.per_tensor_buckets_s is not None:  # the latency as DDP meets it inside backward
        alpha = ddp_alpha(step, cluster, per_bucket)
        cluster = replace(cluster, intra_latency_s=alpha, inter_latency_s=alpha)
    return _ddp_run(step, cluster, bucket_cap_bytes, per_bucket)


def _ddp_run(
    step: MeasuredStep, cluster: Cluster, bucket_cap_bytes: float, per_bucket: float
) -> IterationResult:
    """The fusion schedule of DDP's buckets on ``cluster`` with the run's fixed costs."""
    overlap, slowdown = contention(step)
    method = Method(
        "allreduce", "fusion", "ring", fusion_threshold_bytes=bucket_cap_bytes,
        message_overhead_s=per_bucket, overlap=overlap,
    )  # fmt: skip
    return simulate(
        method.schedule,
        step.gradients,
        step.forward_s,
        step.backward_s,
        lambda nbytes: slowdown * message_seconds(method, cluster, nbytes),
        **method.schedule_options(cluster),
    )


def ddp_alpha(step: MeasuredStep, cluster: Cluster, per_bucket: float) -> float:
    """The all-reduce latency alpha at which the model reproduces the run's DDP iteration with one
    bucket per tensor (bisection on log alpha; the prediction grows with alpha). That run uses
    DDP's own mechanism at a different message count from the buckets being predicted, so the
    prediction is not a replay; alpha absorbs what a collective timed after a barrier misses
    inside backward (wake-ups of blocked ranks, skew)."""
    target = step.per_tensor_buckets_s
    assert target is not None
    low, high = math.log(1e-9), math.log(1.0)
    for _ in range(50):
        middle = (low + high) / 2
        trial = replace(cluster, intra_latency_s=math.exp(middle), inter_latency_s=math.exp(middle))
        if _ddp_run(step, trial, 0.0, per_bucket).iteration_time_s > target:
            high = middle
        else:
            low = middle
    return math.exp((low + high) / 2)


def hook_alpha(step: MeasuredStep, total: float | None, bandwidth_Bps: float) -> float | None:
    """Latency of one ring step inside backward, from a calibration hook's iteration R that
    all-reduces every parameter alone (commatlas/measure/ddp_probes.py): R - F - B - DDP overhead =
    sum over parameters of 2(p-1) alpha + 2(p-1)/p n / B, with B fitted on large messages
    (pattern-free). None when R was not measured."""
    p = step.world_size
    steps = sum(2 * (p - 1) for g in step.gradients if g.bytes > 0)
    if total is None or steps == 0:
        return None
    wire = total - step.forward_s - step.backward_s - step.ddp_overhead_s
    volume = sum(2 * (p - 1) / p * g.bytes for g in step.gradients)
    return max((wire - volume / bandwidth_Bps) / steps, 0.0)


def predict_hook(step: MeasuredStep, profile: ClusterProfile, spec: str) -> IterationResult:
    """A compressor as a blocking DDP hook: per-tensor exchanges after backward (docstring)."""
    values = cluster_from_profile(profile, step.nodes, step.ranks_per_node).values()
    if step.reference_ring is not None:
        ring = step.reference_ring
        alpha = hook_alpha(step, step.ring_hook_s, ring.bandwidth_Bps)
        values = dict(values, alpha=ring.alpha_s if alpha is None else alpha,
                      beta=ring.beta_s_per_byte)  # fmt: skip
    compute = step.exchange_compute_s.get(spec)
    missing = [g.name for g in step.gradients if compute is None or g.name not in compute]
    if missing:
        raise ValueError(f"no measured exchange compute for {spec!r} of tensor(s) {missing}")
    p, alpha, beta, gamma = step.world_size, values["alpha"], values["beta"], values["gamma"]
    dense = set(step.dense.get(spec, ()))

    def wire(g: Gradient) -> float:
        if g.bytes <= 0:
            return 0.0
        if g.name in dense:  # the compressor sends this tensor as it is (PowerSGD: 1-D)
            return 2 * (p - 1) * alpha + 2 * (p - 1) / p * g.bytes * beta
        return exchange_time(spec, g.bytes, p, alpha, beta, gamma)[0]

    # The schedule hands comm a message size only; tensors of one size share their mean.
    by_size: dict[float, list[float]] = {}
    for g in step.gradients:
        by_size.setdefault(g.bytes, []).append(wire(g) + compute[g.name])  # type: ignore[index]
    seconds = {size: mean(times) for size, times in by_size.items()}

    def comm(nbytes: float) -> float:
        return seconds[nbytes]

    serial = [Gradient(g.name, g.bytes, step.backward_s) for g in step.gradients]
    # DDP's bucket handling runs around the hook too; it is paid once per iteration here.
    costs = FixedCosts(message_s=step.ddp_overhead_s / max(len(serial), 1))
    return simulate("wfbp", serial, step.forward_s, step.backward_s, comm, costs=costs)


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
