"""MG-WFBP: merge neighbouring layers' gradients as the cost model's optimal plan says.

Paper: S. Shi, X. Chu and B. Li, "MG-WFBP: Efficient Data Communication for Distributed
Synchronous SGD Algorithms", IEEE INFOCOM 2019, pp. 172-180, doi:10.1109/INFOCOM.2019.8737367.

Algorithm (the plan once, then every iteration):

1. Layers (modules that own trainable parameters) are numbered in ready order, last registered
   first, since backward reaches the output layers first. Given each layer's gradient bytes and
   backward seconds, and an all-reduce time ``alpha + beta * bytes``, the merge plan is
   ``costmodels.schedules.mg_wfbp_plan``: the grouping of consecutive layers that makes the
   WFBP iteration end earliest (an exact dynamic programme; see that module).
2. Each group of layers is one bucket. When backward has made every gradient of a bucket, the
   bucket is packed into one buffer and all-reduced, while backward goes on.
3. ``synchronize()`` waits for all, divides by p and copies the averages back.

Communication cost: one all-reduce per group, as in tensor fusion, but the groups come from the
model (latency merged where it would be exposed, large layers kept alone so they overlap); its
iteration time is schedule ``mg_wfbp`` in ``costmodels.schedules``. The plan is only as good as
the ``alpha``, ``beta`` and backward times it is given; measure them on the cluster.

Example::

    sched = MergedGradientWFBP(model, layer_backward_s=[...], alpha=20e-6, beta=1 / 10e9)
    loss.backward()
    sched.synchronize()
    optimizer.step()
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Sequence

import torch
import torch.distributed as dist

from costmodels.gradients import Gradient
from costmodels.schedules import mg_wfbp_plan
from reference_impls.registry import reference_impl
from reference_impls.scheduling.buckets import BucketedAllReduce, Member
from reference_impls.scheduling.comm import Launcher, torch_allreduce

Layer = tuple[str, list[tuple[str, torch.nn.Parameter]]]  # (module name, its parameters)


def layers_in_ready_order(module: torch.nn.Module) -> list[Layer]:
    """Modules owning trainable parameters, last registered first (backward's order)."""
    layers = []
    for prefix, sub in module.named_modules():
        own = [
            (f"{prefix}.{name}" if prefix else name, param)
            for name, param in sub.named_parameters(recurse=False)
            if param.requires_grad
        ]
        if own:
            layers.append((prefix, own))
    return layers[::-1]


def merge_plan(
    layer_bytes: Sequence[tuple[str, float]],
    layer_backward_s: Sequence[float],
    alpha: float,
    beta: float,
) -> list[list[str]]:
    """Groups of layer names by the cost model's MG-WFBP decision (layers in ready order).

    Layer i's gradient is ready ``sum(layer_backward_s[: i + 1])`` seconds into backward; the
    forward time only shifts every ready time, which leaves the optimal plan unchanged.
    """
    for name, value in (("alpha", alpha), ("beta", beta)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or value < 0:
            raise ValueError(f"{name} must be a number >= 0, got {value!r}")
    if len(layer_backward_s) != len(layer_bytes):
        raise ValueError(
            f"layer_backward_s has {len(layer_backward_s)} entries for {len(layer_bytes)} layers"
        )
    for value in layer_backward_s:
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0:
            raise ValueError(f"layer_backward_s must hold numbers >= 0, got {value!r}")
    ready = itertools.accumulate(layer_backward_s)
    grads = [Gradient(name, size, r) for (name, size), r in zip(layer_bytes, ready, strict=True)]
    if not math.isfinite(sum(g.ready_s for g in grads)):
        raise ValueError("layer_backward_s must be finite")
    groups = mg_wfbp_plan(grads, 0.0, lambda size: alpha + beta * size)
    return [[g.name for g in group] for group in groups]


@reference_impl
class MergedGradientWFBP(BucketedAllReduce):
    """WFBP whose messages are the MG-WFBP merge plan's groups of layers (``self.plan``)."""

    def __init__(
        self,
        module: torch.nn.Module,
        layer_backward_s: Sequence[float],
        alpha: float,
        beta: float,
        group: dist.ProcessGroup | None = None,
        launch: Launcher = torch_allreduce,
    ) -> None:
        layers = layers_in_ready_order(module)
        sizes = [(name, sum(p.numel() * p.element_size() for _, p in ps)) for name, ps in layers]
        self.plan = merge_plan(sizes, layer_backward_s, alpha, beta)
        params_of = dict(layers)
        # bucket k holds the parameters of plan[k]'s layers; _bucket_of maps a parameter to k
        self._members = [[n for layer in grp for n, _ in params_of[layer]] for grp in self.plan]
        self._bucket_of = {n: k for k, names in enumerate(self._members) for n in names}
        dtype_of = {n: p.dtype for _, ps in layers for n, p in ps}
        for names in self._members:
            dtypes = {dtype_of[n] for n in names}
            if len(dtypes) > 1:
                raise ValueError(f"plan group {names} mixes dtypes {sorted(map(str, dtypes))}")
        self._ready: list[dict[str, torch.Tensor]] = [{} for _ in self._members]
        super().__init__(module, group, launch)

    def _on_ready(self, name: str, grad: torch.Tensor) -> None:
        k = self._bucket_of[name]
        self._ready[k][name] = grad
        if len(self._ready[k]) == len(self._members[k]):
            members: list[Member] = [(n, self._ready[k][n]) for n in self._members[k]]
            self._launch_bucket(members)

    def _flush(self) -> None:
        missing = [
            n for k, names in enumerate(self._members) for n in names if n not in self._ready[k]
        ]
        self._ready = [{} for _ in self._members]
        if missing:
            raise RuntimeError(
                f"MergedGradientWFBP: no gradient for {missing}; every rank's bucket must be "
                "complete (every parameter must take part in the loss)"
            )
