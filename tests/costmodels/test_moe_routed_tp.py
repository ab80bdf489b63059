"""Megatron-Core's all-to-all dispatcher gathers and scatters the routed tokens over TP (issue 39,
costmodels/llm/tp_schedule.py): hand-priced against the collective model."""

from __future__ import annotations

from costmodels.llm.communication import _spans, collective_s, communication_breakdown
from costmodels.llm.recipe import TrainingRecipe
from costmodels.llm.shapes import Layout, TransformerShape
from costmodels.llm.step import _routed_top_k
from costmodels.llm.tp_schedule import tp_collectives
from costmodels.validation.dgxc import dgx_h100

GROK = TransformerShape(4, 6144, 48, 4096, ffn=32768, vocab=128256, kv_heads=8, gated_mlp=True,
                        experts=8, top_k=2)  # fmt: skip
LAYOUT = Layout(tp=4, pp=1, dp=4, cp=1, ep=4, global_batch=64, micro_batch=1, zero=1,
                sequence_parallel=True)  # fmt: skip


def test_routed_pair_replaces_the_mlp_pair_of_moe_layers() -> None:
    plain = tp_collectives(GROK, "selective", True)
    routed = tp_collectives(GROK, "selective", True, routed_top_k=2)
    assert [c.layers for c in routed[:4]] == ["all"] * 4  # attention block
    assert [c.layers for c in routed[4:8]] == ["dense"] * 4  # MLP block: dense layers only
    moe = [c for c in routed if c.layers == "moe"]
    assert [(c.kind, c.phase, c.rows, c.gemms) for c in moe] == [
        ("all-gather", "forward", 2.0, ()), ("reduce-scatter", "forward", 2.0, ()),
        ("all-gather", "backward", 2.0, ()), ("reduce-scatter", "backward", 2.0, ())]
    assert len(routed) == len(plain) + 4
    shared = tp_collectives(GROK, "selective", True, routed_top_k=2, shared_experts=True)
    assert [c.layers for c in shared[:8]] == ["all"] * 8  # a shared expert keeps its pair


def test_tp_seconds_by_hand() -> None:
    cluster = dgx_h100()
    span = _spans(LAYOUT, cluster)["tp"]
    act = 1 * 4096 * 6144 * 2.0  # micro-batch x sequence x hidden x bf16 (the TP group's)
    one = {k: collective_s(k, act, span, cluster, True) for k in ("all-gather", "reduce-scatter")}
    two = {k: collective_s(k, 2 * act, span, cluster, True) for k in one}
    m, layers = LAYOUT.micro_batches, GROK.layers
    hand = m * layers * (2 * sum(one.values()) + 2 * sum(two.values()))  # attention + routed
    schedule = tp_collectives(GROK, "selective", True, routed_top_k=2)
    comm = communication_breakdown(GROK, LAYOUT, cluster, tp_schedule=schedule)
    assert abs(comm.tp / hand - 1) < 1e-9
    plain = communication_breakdown(GROK, LAYOUT, cluster)
    assert abs(plain.tp / (m * layers * 4 * sum(one.values())) - 1) < 1e-9


def test_only_megatron_alltoall_with_experts_on_the_tp_group() -> None:
    recipe = TrainingRecipe()
    assert _routed_top_k(GROK, LAYOUT, recipe, "megatron") == 2
    assert _routed_top_k(GROK, LAYOUT, recipe, "pytorch") == 0
    assert _routed_top_k(GROK, LAYOUT, TrainingRecipe(moe_dispatcher="deepep"), "megatron") == 0
    dense = TransformerShape(4, 6144, 48, 4096, ffn=32768, vocab=128256, gated_mlp=True)
    assert _routed_top_k(dense, LAYOUT, recipe, "megatron") == 0


def test_sort_chunks_where_a_gpu_holds_several_experts() -> None:
    from costmodels.llm.frameworks import get_kernel_set
    from costmodels.llm.layer_ops import LayerShard, layer_kernels

    megatron = get_kernel_set("megatron")
    # tp 4, ep 2: 4096 tokens x top_k 2 x ep 2 / 8 experts = 2048 rows per expert, 4 experts here
    ep2 = layer_kernels(GROK, LayerShard(1, 4096, 4096, 4, True, ep=2, moe_load=1.0), "bf16",
                        megatron)  # fmt: skip
    sort = {k.name: k.bytes for k in (*ep2.forward, *ep2.backward) if "sort-chunks" in k.name}
    hand = 2 * (2 + 2) * (2048 * 4) * 6144  # sort + restore, bf16 read + write of 8,192 rows
    assert sort == {"moe-sort-chunks": hand, "moe-sort-chunks-grad": hand}
    ep8 = layer_kernels(GROK, LayerShard(1, 4096, 4096, 4, True, ep=8, moe_load=1.0), "bf16",
                        megatron)  # fmt: skip
    assert not [k for k in ep8.forward if "sort-chunks" in k.name]  # one expert: no regrouping
    other = layer_kernels(GROK, LayerShard(1, 4096, 4096, 4, True, ep=2, moe_load=1.0), "bf16",
                          get_kernel_set("pytorch"))  # fmt: skip
    assert not [k for k in other.forward if "sort-chunks" in k.name]
