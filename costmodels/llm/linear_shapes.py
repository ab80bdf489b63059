"""The linear layers of one transformer layer on one GPU of a TP group: GEMM shapes per kind.

Megatron-style sharding (Shoeybi et al. 2019, arXiv:1909.08053): the QKV and first MLP GEMMs
are column-parallel (output split over t), the attention output and second MLP GEMMs
row-parallel (input split over t). With T = micro-batch x s/cp tokens on the GPU, d the head
width (costmodels/llm/layer_kinds.py) and kv_local = max(1, kv_heads / t) key-value heads (when
t exceeds the key-value heads, Megatron-Core and torchtitan replicate each of them over t /
kv_heads ranks):

=================  ========================================
GEMM (forward)     m x n x k
=================  ========================================
qkv                T x (heads/t + 2 kv_local) d x h
attention output   T x h x heads d / t
MLP in (x2 gated)  T x f/t x h
MLP out            T x h x f/t
=================  ========================================

MLA (DeepSeek-V2, arXiv:2405.04434, Sec. 2.1, as Megatron-Core's MLASelfAttention shards it):
the down projections q_a (T x q_lora x h) and kv_a (T x (kv_lora + rope) x h) are replicated on
every rank of the TP group, the up projections q_b (T x heads/t (nope + rope) x q_lora) and kv_b
(T x heads/t (nope + v) x kv_lora) and the output (T x h x heads/t v) are split by head.

MoE layers: a router GEMM (T x E x h, bf16), grouped expert GEMMs over the T x top_k routed
tokens with E/ep experts per GPU (balanced routing, the busiest EP rank's share: ``load`` x the
mean, or the chance spread of costmodels/llm/moe_routing.busiest_rank_factor when 0; few tokens
per expert cost what their shape costs in costmodels/llm/gemm.py: tile and wave quantisation
over m = tokens per expert) and, for ``shared_experts``, one
dense MLP of shared x ffn every token runs. A MoE model's dense layers use ``dense_ffn``.
LatentMoE (issue 39, Nemotron 3 Super; Megatron-Core moe_layer.py ``fc1_latent_proj`` /
``fc2_latent_proj``, built ``parallel_mode="duplicated"``): the routed experts work on the latent
width l instead of h (expert GEMMs with k or n = l), and each rank projects its own tokens
(T / t: "When using expert parallelism and tensor parallelism for training, sequence
parallelism must be used", Megatron-Core model_parallel_config.py) h -> l before the dispatch and
l -> h after the combine, with whole weights.
Each GEMM's backward is a dgrad (m x k x n) and a wgrad (k x n x m) of the same FLOPs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from costmodels.llm.layer_kinds import dense_ffn, head_dim
from costmodels.llm.moe_routing import busiest_rank_factor
from costmodels.llm.shapes import TransformerShape


@dataclass(frozen=True)
class Linear:
    """One forward GEMM of a layer: C[m, n] = A[m, k] W[k, n], ``batch`` of them (experts)."""

    name: str
    m: int
    n: int
    k: int
    batch: int = 1
    replicated: bool = False  # the same weight on every TP rank (MLA down projections)
    fp8: bool = True  # runs in fp8 under FP8 training (the router does not)


def local_kv_heads(shape: TransformerShape, tp: int) -> int:
    """Key-value heads on one TP rank: kv_heads / tp, at least one (replicated beyond that)."""
    return max(1, shape.kv_head_count // tp)


def attention_linears(shape: TransformerShape, tokens: int, tp: int) -> list[Linear]:
    h, m = shape.hidden, shape.mla
    heads = shape.heads // tp
    if m is not None:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        out: list[Linear] = []
        if m.q_lora_rank:
            out += [Linear("q-a", tokens, m.q_lora_rank, h, replicated=True),
                    Linear("q-b", tokens, heads * qk, m.q_lora_rank)]  # fmt: skip
        else:
            out.append(Linear("q", tokens, heads * qk, h))
        out += [
            Linear("kv-a", tokens, m.kv_lora_rank + m.qk_rope_head_dim, h, replicated=True),
            Linear("kv-b", tokens, heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank),
            Linear("attention-out", tokens, h, heads * m.v_head_dim),
        ]
        return out
    d = head_dim(shape)
    q_local, kv_local = heads * d, local_kv_heads(shape, tp) * d
    return [Linear("qkv", tokens, q_local + 2 * kv_local, h),
            Linear("attention-out", tokens, h, q_local)]  # fmt: skip


def mlp_linears(shape: TransformerShape, tokens: int, tp: int, ep: int, moe: bool,
                etp: int = 0, load: float = 0.0) -> list[Linear]:  # fmt: skip
    """The MLP's GEMMs on one GPU. Routed experts are split ``etp`` ways (issue 39: the experts'
    own TP degree, tp when 0): each rank then runs tokens x etp / tp of the TP group's tokens
    (its sequence-parallel share, gathered over the etp ranks) through whole-width experts."""
    h = shape.hidden
    gate = 2 if shape.gated_mlp else 1
    if not moe:
        f_local = dense_ffn(shape) // tp
        return [Linear("mlp-in", tokens, gate * f_local, h), Linear("mlp-out", tokens, h, f_local)]
    etp = etp or tp
    f_local = shape.ffn_size // etp
    local_experts = max(1, shape.experts // ep)
    routed = tokens * etp // tp * shape.top_k * ep  # copies of the EP group's tokens
    factor = load or busiest_rank_factor(routed, ep)
    per_expert = max(1, math.ceil(routed // shape.experts * factor))
    e = shape.expert_width  # hidden, or a LatentMoE's latent (issue 39)
    out = [Linear("expert-in", per_expert, gate * f_local, e, local_experts),
           Linear("expert-out", per_expert, e, f_local, local_experts),
           Linear("router", tokens, shape.experts, h, fp8=False)]  # fmt: skip
    if shape.moe_latent:  # whole weights on every TP rank, on its sequence-parallel tokens
        own = max(1, tokens // tp)
        out += [Linear("latent-in", own, e, h, replicated=True),
                Linear("latent-out", own, h, e, replicated=True)]  # fmt: skip
    if shape.shared_experts:
        width = shape.shared_experts * (shape.ffn_size // tp)
        out += [Linear("shared-expert-in", tokens, gate * width, h),
                Linear("shared-expert-out", tokens, h, width)]  # fmt: skip
    return out


def layer_linears(
    shape: TransformerShape, tokens: int, tp: int, ep: int, moe: bool, etp: int = 0,
    load: float = 0.0,
) -> list[Linear]:
    """Every forward GEMM of one dense (``moe=False``) or MoE layer on one GPU."""
    return attention_linears(shape, tokens, tp) + mlp_linears(shape, tokens, tp, ep, moe, etp,
                                                              load)  # fmt: skip


def local_weights(linears: list[Linear]) -> float:
    """Weight elements these GEMMs read on one GPU (k x n x batch each)."""
    return float(sum(x.k * x.n * x.batch for x in linears))


# torchtitan's per-op policy (torchtitan/models/llama3/infra/parallelize.py ``_save_list`` with
# "only save every other mm") saves every odd matmul of a block (of wq, wk, wv, wo, w1, w3, w2:
# wq, wv, w1, w2) and the attention output, and recomputes the rest; our fused GEMMs re-run this
# share of their forward.
def op_recompute_share(name: str, shape: TransformerShape) -> float:
    """Share of a forward GEMM torchtitan's per-op checkpointing re-runs (see the comment)."""
    if name == "qkv":
        return shape.kv_head_count / (shape.heads + 2 * shape.kv_head_count)  # wk
    if name == "attention-out":
        return 1.0  # wo
    if name in ("q-b", "kv-b"):
        return 0.5
    if name in ("mlp-in", "expert-in", "shared-expert-in"):
        return 0.5 if shape.gated_mlp else 0.0  # w3 of the fused gate/up pair
    return 0.0
