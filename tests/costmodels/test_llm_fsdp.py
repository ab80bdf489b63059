"""ZeRO-3 / FSDP2 as it runs (costmodels/llm/fsdp.py, dp_exposure.py) and the data-parallel
knobs of issue 26: the block schedule against a hand-worked timeline, prefetch and resharding,
ZeRO-3 throughput falling with the GPU count at a fixed global batch, HSDP, the reduce dtype and
the distributed optimizer's overlapped all-gather."""

from __future__ import annotations

from dataclasses import replace

import pytest

from costmodels.hardware import get_gpu
from costmodels.llm.communication import wire_bytes
from costmodels.llm.dp_exposure import block_collectives
from costmodels.llm.fsdp import Block, simulate_microbatch
from costmodels.llm.group_span import GroupSpan
from costmodels.llm.groups import allreduce_s, collective_s
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.presets import preset_shape
from costmodels.llm.recipe import TrainingRecipe
from costmodels.llm.shapes import Layout, LLMCluster
from costmodels.llm.step import predict_step

H100 = get_gpu("h100")
SLOW = LLMCluster(H100, 8, gpu_intra_link(H100).bandwidth_Bps, 12.5e9)  # 100 Gb/s per GPU
LLAMA_8B = preset_shape("Llama 3.1 8B", 4096)


def test_block_schedule_by_hand() -> None:
    """Four blocks (forward 1, backward 2, gather 0.5, reduce 0.5), root gather/reduce 0.1,
    prefetch 1. Forward: root 0.1; AG0 0.1-0.6, F0 0.6-1.6; AG1 0.6-1.1, F1 1.6-2.6; AG2 waits
    for F0 (1.6-2.1), F2 2.6-3.6; AG3 2.6-3.1, F3 3.6-4.6. Backward (block 3 kept): B3 4.6-6.6
    with AG2 issued at 4.6 (-5.1), RS3 6.6-7.1; B2 6.6-8.6, AG1 7.1-7.6, RS2 8.6-9.1; B1
    8.6-10.6, AG0 9.1-9.6, RS1 10.6-11.1; B0 10.6-12.6, RS0 12.6-13.1; root RS 13.1-13.2."""
    blocks = [Block(1.0, 2.0, 0.5, 0.5)] * 4
    sim = simulate_microbatch(blocks, Block(0.0, 0.0, 0.1, 0.1))
    assert sim.total_s == pytest.approx(13.2)
    assert sim.compute_s == pytest.approx(12.0)
    assert sim.exposed_s == pytest.approx(0.1 + 0.5 + 0.5 + 0.1)  # first gathers, last reduces
    assert sim.communication_s == pytest.approx(0.2 + 4 * 0.5 + 3 * 0.5 + 4 * 0.5)


def test_short_blocks_expose_their_gathers_and_prefetch_or_keeping_weights_helps() -> None:
    short = [Block(0.1, 0.2, 0.5, 0.5)] * 4
    root = Block(0.0, 0.0, 0.0, 0.0)
    sim = simulate_microbatch(short, root)
    # network-bound: 4 gathers, 3 regathers and 4 reduces of 0.5 s back to back (5.5 s), and
    # the last reduce waits 0.1 s for the last backward (by hand: ends at 5.6 s)
    assert sim.total_s == pytest.approx(5.6)
    assert sim.exposed_s == pytest.approx(5.6 - 4 * 0.3)
    kept = simulate_microbatch(short, root, reshard_after_forward=False)
    assert kept.communication_s == pytest.approx(4 * 0.5 + 4 * 0.5)  # no backward gathers
    assert kept.total_s < sim.total_s
    long = [Block(1.0, 2.0, 0.5, 0.5)] * 4
    assert simulate_microbatch(long, root, prefetch=0).exposed_s > simulate_microbatch(
        long, root, prefetch=1).exposed_s  # fmt: skip


def test_zero3_throughput_falls_with_gpus_at_a_fixed_global_batch() -> None:
    """The mechanism behind ZeRO-3's scaling at a fixed global batch: more GPUs, fewer tokens per
    GPU, the same bytes per block, so more of each gather is exposed."""
    rates, exposed = [], []
    for gpus in (16, 32, 64, 128, 256):
        layout = Layout(tp=1, pp=1, dp=gpus, global_batch=256, micro_batch=256 // gpus, zero=3,
                        recompute="full")  # fmt: skip
        step = predict_step(LLAMA_8B, layout, SLOW, framework="pytorch-compile")
        rates.append(step.tokens_per_s_per_gpu)
        exposed.append(step.exposed_comm_s / step.iteration_time_s)
    assert rates == sorted(rates, reverse=True) and rates[-1] < 0.8 * rates[0]
    assert exposed == sorted(exposed)


def test_hsdp_collectives_by_hand() -> None:
    """HSDP with 8-rank shard groups (one node each): a block's weights are gathered and its
    gradients reduce-scattered inside the node, and the reduced 1/8 shard is all-reduced across
    the 8 replica nodes (hybrid sharding, Zhao et al., arXiv:2304.11277); each GPU keeps 1/8 of
    the sharded states instead of 1/64."""
    full = Layout(tp=1, pp=1, dp=64, global_batch=64, micro_batch=1, zero=3, recompute="full")
    hsdp = replace(full, dp_shard=8)
    wire = wire_bytes("bf16", "pytorch-compile", 3)
    params = 218_112_000.0  # one Llama 3.1 8B block (dense, no experts)
    in_node, across = GroupSpan(8, 1, 8), GroupSpan(8, 8, 1)
    gather, reduce = block_collectives(LLAMA_8B, hsdp, SLOW, wire, params, 0.0)
    assert gather == pytest.approx(collective_s("all-gather", 2 * params, in_node, SLOW))
    assert reduce == pytest.approx(collective_s("reduce-scatter", 4 * params, in_node, SLOW)
                                   + allreduce_s(4 * params / 8, across, SLOW))  # fmt: skip
    everywhere = GroupSpan(64, 8, 8)
    gather, reduce = block_collectives(LLAMA_8B, full, SLOW, wire, params, 0.0)
    assert gather == pytest.approx(collective_s("all-gather", 2 * params, everywhere, SLOW))
    assert reduce == pytest.approx(collective_s("reduce-scatter", 4 * params, everywhere, SLOW))
    a = predict_step(LLAMA_8B, full, SLOW, framework="pytorch-compile")
    b = predict_step(LLAMA_8B, hsdp, SLOW, framework="pytorch-compile")
    assert b.memory_breakdown_bytes["optimizer_states"] == pytest.approx(
        8 * a.memory_breakdown_bytes["optimizer_states"], rel=1e-9)  # fmt: skip
    assert "hsdp" in b.unvalidated_mechanisms  # no dev run uses HSDP
    with pytest.raises(ValueError, match="dp_shard"):
        replace(full, dp_shard=5)


def test_reduce_dtype_halves_the_reduction() -> None:
    layout = Layout(tp=1, pp=1, dp=32, global_batch=64, micro_batch=2, zero=3, recompute="full")
    fp32 = predict_step(LLAMA_8B, layout, SLOW, framework="pytorch-compile")
    bf16 = predict_step(LLAMA_8B, layout, SLOW, framework="pytorch-compile",
                        recipe=TrainingRecipe(reduce_dtype="bf16"))  # fmt: skip
    # per micro-batch: two bf16 gathers (2 + 2 bytes) and one reduce (4 -> 2 bytes) per weight
    assert bf16.dp_comm_s < fp32.dp_comm_s
    assert bf16.dp_comm_s / fp32.dp_comm_s == pytest.approx((2 + 2 + 2) / (2 + 2 + 4), rel=0.05)


def test_distributed_optimizer_hides_its_gather_under_the_next_forward() -> None:
    """Megatron's distributed optimizer (ZeRO-1) with --overlap-param-gather: the all-gather of
    the updated weights runs during the next step's first forward instead of after the
    optimizer."""
    layout = Layout(tp=8, pp=1, dp=8, global_batch=64, micro_batch=1, zero=1,
                    sequence_parallel=True, recompute="selective")  # fmt: skip
    shape = preset_shape("Llama 3.1 70B", 4096)
    on = predict_step(shape, layout, SLOW, recipe=TrainingRecipe(overlap_param_gather=True))
    off = predict_step(shape, layout, SLOW, recipe=TrainingRecipe(overlap_param_gather=False))
    assert on.exposed_comm_s < off.exposed_comm_s
    # Megatron's distributed optimizer: 6 + 12/d bytes per parameter (bf16 weights, fp32 grads,
    # fp32 master + Adam moments sharded over d), Megatron-LM docs "Distributed Optimizer"
    states = sum(on.memory_breakdown_bytes[k] for k in ("parameters", "gradients",
                                                         "optimizer_states"))  # fmt: skip
    dense = on.memory_breakdown_bytes["parameters"] / 2  # parameters on this GPU
    assert states == pytest.approx(dense * (6 + 12 / 8), rel=1e-9)
