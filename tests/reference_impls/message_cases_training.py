"""Compression, optimizers, parallelism and the parameter server as message-invariant cases.

See message_cases.py for what a case holds. Each compressor runs through
``allreduce_compressed``; an all-reduce payload costs 2(p-1) messages, a packed all-gather
payload p-1, and the custom exchanges follow their own rules (sharded vote, counts first,
recursive doubling). The optimizers and layers run the step or pass that communicates.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from dist_data import normals
from message_cases import NUMEL, Case, fold_messages, ints, ring_all, ring_half
from sim_world import start_counting
from torch import nn

from reference_impls.compression import allreduce_compressed, get
from reference_impls.optimizers import LocalSGD, OneBitAdam
from reference_impls.parallel import ParallelMLP, ZeroOptimizer
from reference_impls.parameter_server import ps_push_pull


def _compressed(name: str, shape: tuple[int, ...] = (NUMEL // 4,), **config: Any) -> Callable:
    def run(rank: int, p: int) -> torch.Tensor:
        x = normals(rank, int(torch.Size(shape).numel())).view(shape)
        allreduce_compressed(x, get(name, **config), name="g")
        return x

    return run


def _local_sgd(rank: int, p: int, period: int = 3) -> None:
    model = nn.Linear(NUMEL // 840, 4)
    wrapper = LocalSGD(torch.optim.SGD(model.parameters(), lr=0.1), period)
    for step in range(period):
        model(normals(rank + step, 2 * model.in_features).view(2, -1)).sum().backward()
        wrapper.step()
        wrapper.zero_grad()


def _onebit_adam(rank: int, p: int, warmup: bool) -> None:
    weight = nn.Parameter(torch.zeros(NUMEL // 4, dtype=torch.float64))
    optimizer = OneBitAdam([weight], warmup_steps=1)
    if not warmup:  # take the warm-up step outside the counted call
        weight.grad = normals(rank, weight.numel()).double()
        optimizer.step()
        start_counting()
    weight.grad = normals(rank + 7, weight.numel()).double()
    return optimizer.step()


def _zero(rank: int, p: int, stage: int) -> None:
    layer = nn.Linear(12, 35, dtype=torch.float64)  # 455 parameters: padded to a multiple of p
    zero = ZeroOptimizer(layer, stage, torch.optim.SGD, lr=0.1)
    layer(normals(rank, 24).double().view(2, 12)).sum().backward()
    zero.step()


def _dense(inputs: int, outputs: int) -> nn.Linear:
    """The same layer on every rank (as a checkpoint would give), without the global RNG."""
    layer = nn.Linear(inputs, outputs).double()
    with torch.no_grad():
        layer.weight.copy_(normals(inputs, inputs * outputs).view(outputs, inputs))
        layer.bias.copy_(normals(outputs, outputs))
    return layer


def _mlp(rank: int, p: int) -> None:
    fc1, fc2 = _dense(8, 48), _dense(48, 8)
    x = normals(0, 24).double().view(3, 8).requires_grad_(True)
    F.mse_loss(ParallelMLP(fc1, fc2)(x), torch.zeros(3, 8, dtype=torch.float64)).backward()


def _sequence_parallel(rank: int, p: int, method: str, backward: bool) -> torch.Tensor:
    """This rank's shard of q, k, v; 16 heads, so every head block of p <= 16 ranks is sent."""
    from reference_impls.parallel.ring_attention import ring_attention
    from reference_impls.parallel.ulysses import ulysses_attention

    tokens, heads, width = 2, 16, 4  # per rank
    q, k, v = (
        normals(rank + 31 * i, tokens * heads * width).double().view(tokens, heads, width)
        for i in range(3)
    )
    for tensor in (q, k, v):
        tensor.requires_grad_(backward)
    attention = ring_attention if method == "ring" else ulysses_attention
    out = attention(q, k, v, seq_len=p * tokens)
    if backward:
        out.sum().backward()
    return out.detach()


def _ps(rank: int, world: int, servers: int, placement: str) -> torch.Tensor:
    x = ints(rank)
    ps_push_pull(x, num_servers=servers, placement=placement)
    return x


def _ps_messages(p: int, r: int, servers: int, placement: str) -> int:
    if placement == "separate":  # ranks 0..p-1 work, p..p+S-1 serve
        return servers if r < p else p
    if p == 1:
        return 0
    return (servers - 1) + (p - 1) if r < servers else servers


def bits(b: int) -> Callable[[int], dict[str, float]]:
    return lambda p: {"b": b}


def _gathered(name: str, variant: str = "ring-allgather", shape=(NUMEL // 4,), **config) -> Case:
    """A compressor whose packed payload is ring all-gathered: p-1 messages."""
    return Case(name, variant, _compressed(name, shape, **config), ring_half)


def _allreduced(name: str, variant: str, **config: Any) -> Case:
    """A compressor whose payload is ring all-reduced: 2(p-1) messages."""
    return Case(name, variant, _compressed(name, **config), ring_all)


def other_cases(p: int) -> dict[str, Case]:
    cases = {
        "fp16": Case("fp16-comm", "ring-allreduce", _compressed("fp16-comm"), ring_all, bits(16)),
        "random-k-shared": _allreduced("random-k", "shared-seed", ratio=0.25),
        "random-k-independent": _gathered("random-k", "independent", ratio=0.25, shared_seed=False),
        "topk": _gathered("topk-sparsification", ratio=0.25),
        "dgc": _gathered("dgc", ratio=0.25),
        "qsgd": _gathered("qsgd"),
        "terngrad": _gathered("terngrad"),
        "ef-signsgd": _gathered("ef-signsgd"),
        "onebit-sgd": _gathered("onebit-sgd", shape=(84, 60)),
        "powersgd": Case(
            "powersgd",
            "ring-allreduce",
            _compressed("powersgd", (84, 60), rank=2),
            lambda p, r: 2 * ring_all(p, r),  # the P factor, then the Q factor
        ),
        "signsgd": Case(
            "signsgd", "sharded-ps", _compressed("signsgd"), ring_all, port="multi-port"
        ),
        # GPU-speed variants (issue 20): the same messages as the method they speed up
        "topk-sampled": Case(
            "topk-sparsification",
            "ring-allgather",
            _compressed("topk-sparsification/sampled", ratio=0.25, exact_below=0),
            ring_half,
        ),
        "topk-prefiltered": Case(
            "topk-sparsification",
            "ring-allgather",
            _compressed("topk-sparsification/prefiltered", ratio=0.25, exact_below=0),
            ring_half,
        ),
        "qsgd-fused": Case("qsgd", "ring-allgather", _compressed("qsgd/fused"), ring_half),
        "signsgd-fused": Case(
            "signsgd", "sharded-ps", _compressed("signsgd/fused"), ring_all, port="multi-port"
        ),
        "powersgd-fast": Case(
            "powersgd",
            "ring-allreduce",
            _compressed("powersgd/fast", (84, 60), rank=2),
            lambda p, r: 2 * ring_all(p, r),
        ),
        "threshold": Case(  # the counts' ring all-gather, then the payloads'
            "threshold-sparsification",
            "counted-ring-allgather",
            _compressed("threshold-sparsification", tau=0.5),
            ring_all,
        ),
        "gtopk": Case(
            "gtopk",
            "recursive-doubling",
            _compressed("gtopk", ratio=0.25),
            functools.partial(fold_messages, per_round=1),  # recursive doubling's schedule
        ),
        "local-sgd": Case(  # H = 3 steps: one average, priced as 1/H per step
            "local-sgd", "ring", _local_sgd, ring_all, lambda p: {"H": 3}, per_model_unit=3.0
        ),
        "onebit-adam-warmup": Case(
            "onebit-adam", "warmup", functools.partial(_onebit_adam, warmup=True), ring_all
        ),
        "onebit-adam": Case(  # the all-to-all and three ring all-gathers
            "onebit-adam",
            "compressed",
            functools.partial(_onebit_adam, warmup=False),
            lambda p, r: 4 * ring_half(p, r),
            bits(1),
            port="multi-port",
        ),
        "zero-1": Case("zero", "stage-1-2", functools.partial(_zero, stage=1), ring_all),
        "zero-2": Case("zero", "stage-1-2", functools.partial(_zero, stage=2), ring_all),
        "zero-3": Case(  # all-gathers in forward and backward, one reduce-scatter
            "zero", "stage-3", functools.partial(_zero, stage=3), lambda p, r: 3 * (p - 1)
        ),
        "megatron-mlp": Case(  # the MLP is half of the layer the model prices
            "megatron-tp", "per-layer", _mlp, lambda p, r: 2 * ring_all(p, r), per_model_unit=0.5
        ),
        "ring-attention": Case(  # K/V blocks passed p-1 times
            "ring-attention",
            "forward",
            functools.partial(_sequence_parallel, method="ring", backward=False),
            ring_half,
        ),
        "ring-attention-backward": Case(  # again with dK, dV, which take one more hop home
            "ring-attention",
            "forward-backward",
            functools.partial(_sequence_parallel, method="ring", backward=True),
            lambda p, r: 2 * (p - 1) + min(1, p - 1),
        ),
        "ulysses": Case(  # pairwise all-to-alls of Q, K, V and O
            "deepspeed-ulysses",
            "forward",
            functools.partial(_sequence_parallel, method="ulysses", backward=False),
            lambda p, r: 4 * (p - 1),
        ),
        "ulysses-backward": Case(  # and of their four gradients
            "deepspeed-ulysses",
            "forward-backward",
            functools.partial(_sequence_parallel, method="ulysses", backward=True),
            lambda p, r: 8 * (p - 1),
        ),
    }
    for servers in sorted({1, 2, p}):
        if servers <= p:
            cases[f"ps-colocated-{servers}"] = Case(
                "parameter-server", "colocated",
                functools.partial(_ps, servers=servers, placement="colocated"),
                functools.partial(_ps_messages, servers=servers, placement="colocated"),
                port="multi-port", counts=lambda p, s=servers: {"S": s},
            )  # fmt: skip
        cases[f"ps-separate-{servers}"] = Case(
            "parameter-server", "separate",
            functools.partial(_ps, servers=servers, placement="separate"),
            functools.partial(_ps_messages, servers=servers, placement="separate"),
            port="multi-port", counts=lambda p, s=servers: {"S": s},
            processes=lambda p, s=servers: p + s,
        )  # fmt: skip
    return cases
