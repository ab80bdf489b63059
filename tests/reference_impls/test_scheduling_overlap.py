"""Communication schedulers: overlap with backward, averages equal to plain all-reduce, plans.

Each method trains one step of the same 4-layer model on 2 and 3 ranks. Two identity layers
sleep 100 ms in backward before the two input-side Linear layers, so the output-side gradients
are ready long before backward ends: a scheduler that overlaps starts communicating inside
``loss.backward()`` (a launch from a gradient hook precedes the return of backward, whatever the
machine's load). How much of the communication then finishes during backward depends on the
load, so it is measured by benchmarks/scheduler_overlap.py, not asserted here (issue 24).
Weights, inputs and targets are small integers in float64, so every gradient is an integer far
below 2**53 and every sum is exact in any order: results must equal
``dist.all_reduce(grad) / p`` bit for bit.
"""

from __future__ import annotations

import time

import pytest
import torch
import torch.distributed as dist
from dist_data import error_of, model_of

from costmodels.gradients import Gradient
from costmodels.schedules import mg_wfbp_plan
from costmodels.schedules.fusion import buckets as fusion_buckets
from reference_impls.comm import count_bytes
from reference_impls.scheduling import (
    ByteScheduler,
    MergedGradientWFBP,
    RingAllReduceThread,
    TensorFusion,
    WaitFreeBackprop,
    torch_allreduce,
)
from reference_impls.testing import run_distributed
from reference_impls.testing.slow_backward import SleepInBackward

DELAY_S = 0.1  # long beside a small all-reduce, even on a loaded machine
FUSION_THRESHOLD = 2000
# MG-WFBP inputs: backward seconds per layer in ready order (Linear 5, 4, 2, 0), alpha, beta.
LAYER_BACKWARD_S = [0.001, 0.001, DELAY_S, DELAY_S]
ALPHA, BETA = 0.01, 1e-6
PARTITION = CREDIT = 256  # bytes: 32 float64 elements, one partition in flight
SLOW_LAUNCH_S = 0.02  # ByteScheduler: a slow network, so that a queue builds up
METHODS = ["wfbp", "wfbp-ring", "fusion", "mg-wfbp", "bytescheduler"]


def make_model(delay_s: float) -> torch.nn.Sequential:
    """Linear layers 0, 2, 4, 5 (sleeps at 1 and 3); integer weights, the same on every rank."""
    model = torch.nn.Sequential(
        torch.nn.Linear(6, 12),
        SleepInBackward(delay_s),
        torch.nn.Linear(12, 12),
        SleepInBackward(delay_s),
        torch.nn.Linear(12, 24),
        torch.nn.Linear(24, 6),
    ).double()
    generator = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.randint(-2, 3, param.shape, generator=generator))
    return model


def loss_of(model: torch.nn.Module, rank: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(100 + rank)
    x = torch.randint(-2, 3, (4, 6), generator=generator).double()
    target = torch.randint(-2, 3, (4, 6), generator=generator).double()
    return (model(x) * target).sum()


def slow_allreduce(tensor: torch.Tensor, group: dist.ProcessGroup | None) -> torch.futures.Future:
    time.sleep(SLOW_LAUNCH_S)
    return torch_allreduce(tensor, group)


def build(
    method: str, model: torch.nn.Module
) -> WaitFreeBackprop | TensorFusion | MergedGradientWFBP | ByteScheduler:
    if method == "wfbp":
        return WaitFreeBackprop(model)
    if method == "wfbp-ring":
        return WaitFreeBackprop(model, launch=RingAllReduceThread())
    if method == "fusion":
        return TensorFusion(model, threshold_bytes=FUSION_THRESHOLD)
    if method == "mg-wfbp":
        return MergedGradientWFBP(model, LAYER_BACKWARD_S, ALPHA, BETA)
    return ByteScheduler(model, PARTITION, CREDIT, launch=slow_allreduce)


def reference_grads(rank: int, world: int) -> dict[str, torch.Tensor]:
    model = make_model(0.0)
    loss_of(model, rank).backward()
    out = {}
    for name, param in model.named_parameters():
        total = param.grad.clone()
        dist.all_reduce(total)
        out[name] = total / world
    return out


def bad_calls(rank: int) -> dict[str, tuple[str, str]]:
    model = make_model(0.0)
    errors = {
        "threshold": error_of(lambda: TensorFusion(model, threshold_bytes=-1)),
        "threshold_str": error_of(lambda: TensorFusion(model, threshold_bytes="64MB")),
        "layer_times": error_of(lambda: MergedGradientWFBP(model, [0.1], ALPHA, BETA)),
        "alpha": error_of(lambda: MergedGradientWFBP(model, LAYER_BACKWARD_S, -1.0, BETA)),
        "partition": error_of(lambda: ByteScheduler(model, 0, CREDIT)),
        "partition_frac": error_of(lambda: ByteScheduler(model, 10.5, CREDIT)),
        "credit": error_of(lambda: ByteScheduler(model, PARTITION, -5)),
        "launch": error_of(lambda: WaitFreeBackprop(model, launch="nccl")),
        "module": error_of(lambda: WaitFreeBackprop("model")),
    }
    # Two backward passes before synchronize(): the second gradient is refused.
    wfbp = WaitFreeBackprop(model)
    loss_of(model, rank).backward()
    errors["twice"] = error_of(lambda: loss_of(model, rank).backward())
    wfbp.synchronize()  # drains the first pass's all-reduces on every rank alike
    return errors


def scheduling_world(rank: int, world: int) -> dict:
    out: dict = {"reference": reference_grads(rank, world)}
    for method in METHODS:
        model = make_model(DELAY_S)
        scheduler = build(method, model)
        dist.barrier()  # start backward together, so no rank's comm waits for a late peer
        with count_bytes() as counter:
            loss_of(model, rank).backward()
            backward_end = time.perf_counter()
            records = scheduler.synchronize()
        out[method] = {
            "grads": {name: p.grad.clone() for name, p in model.named_parameters()},
            "records": records,
            "backward_end": backward_end,
            "sent": counter.bytes_sent,
            "plan": getattr(scheduler, "plan", None),
        }
        scheduler.remove()
    out["errors"] = bad_calls(rank)
    return out


def expected_mg_plan() -> list[list[str]]:
    """The cost model's plan for the test's inputs, computed here independently."""
    sizes = {"5": (144 + 6) * 8, "4": (288 + 24) * 8, "2": (144 + 12) * 8, "0": (72 + 12) * 8}
    ready, grads = 0.0, []
    for name, seconds in zip(sizes, LAYER_BACKWARD_S, strict=True):
        ready += seconds
        grads.append(Gradient(name, sizes[name], ready))
    plan = mg_wfbp_plan(grads, 0.0, lambda n: ALPHA + BETA * n)
    return [[g.name for g in group] for group in plan]


def check_priority_order(records: list) -> None:
    """At each decision on rank 0, nothing more urgent was waiting in the queue."""
    for x in records:
        for y in records:
            queued_then = y.ready_seq < x.start_seq < y.start_seq
            assert not (queued_then and y.priority < x.priority), (x, y)
    overtook = any(
        x.priority < y.priority and x.ready_seq > y.ready_seq and x.start_seq < y.start_seq
        for x in records
        for y in records
    )
    assert overtook, "no front-layer partition overtook a queued back-layer partition"


@pytest.mark.parametrize("world", [2, 3])
def test_schedulers(world: int) -> None:
    per_rank = run_distributed(scheduling_world, world, timeout_s=90)
    ready_order = [(r.name, r.nbytes) for r in per_rank[0]["wfbp"]["records"]]
    assert ready_order[0][0].startswith("5."), ready_order  # the output layer is ready first
    for rank, result in enumerate(per_rank):
        for method in METHODS:
            got = result[method]
            for name, grad in got["grads"].items():
                assert torch.equal(grad, result["reference"][name]), (rank, method, name)
            starts = [r.start_s for r in got["records"]]
            assert min(starts) < got["backward_end"], (rank, method)  # started during backward
            # one clock's ordering, not durations: ready, then launched, then completed
            assert all(r.ready_s <= r.start_s <= r.end_s for r in got["records"]), method
        # WFBP with the reference ring: the ring's bytes per tensor (every size divides by p).
        ring = model_of("ring-allreduce")
        formula = sum(float(ring.evaluate_volume(p=world, n=n)) for _, n in ready_order)
        assert result["wfbp-ring"]["sent"] == pytest.approx(formula)
        # Tensor fusion: the cost model's bucketing rule over the observed ready order.
        grads = [Gradient(name, n, 0.0) for name, n in ready_order]
        expected = ["+".join(g.name for g in b) for b in fusion_buckets(grads, FUSION_THRESHOLD)]
        assert [r.name for r in result["fusion"]["records"]] == expected
        # MG-WFBP: the plan used is the cost model's, and the messages follow it.
        plan = result["mg-wfbp"]["plan"]
        assert plan == expected_mg_plan()
        assert len(plan) > 1 and any(len(group) > 1 for group in plan), plan  # not trivial
        sent_layers = [
            sorted({name.split(".")[0] for name in r.name.split("+")})
            for r in result["mg-wfbp"]["records"]
        ]
        assert sent_layers == [sorted(group) for group in plan]
        # ByteScheduler: partitions of at most PARTITION bytes, in rank 0's order everywhere.
        records = result["bytescheduler"]["records"]
        assert all(r.nbytes <= PARTITION for r in records)
        assert [r.name for r in records] == [
            r.name for r in per_rank[0]["bytescheduler"]["records"]
        ]
    check_priority_order(per_rank[0]["bytescheduler"]["records"])
    check_errors(per_rank[0]["errors"])


def check_errors(errors: dict[str, tuple[str, str]]) -> None:
    expected = {
        "threshold": ("ValueError", "threshold_bytes"),
        "threshold_str": ("ValueError", "threshold_bytes"),
        "layer_times": ("ValueError", "layer_backward_s has 1 entries for 4 layers"),
        "alpha": ("ValueError", "alpha must be"),
        "partition": ("ValueError", "partition_bytes must be"),
        "partition_frac": ("ValueError", "whole number"),
        "credit": ("ValueError", "credit_bytes must be"),
        "launch": ("TypeError", "launch must be a callable"),
        "module": ("TypeError", "module must be a torch.nn.Module"),
        "twice": ("RuntimeError", "second gradient"),
    }
    for key, (kind, words) in expected.items():
        assert errors[key][0] == kind and words in errors[key][1], (key, errors[key])
