"""The tensor-parallel collectives of one layer and micro-batch: which run, in which element type,
and which GEMM each can be micro-pipelined with under asynchronous TP (async_tp.py).

Sequence parallelism (Korthikanti et al. 2022, arXiv:2205.05198, Sec. 4.2.2): each block (the
attention block, the MLP block) gathers its sequence-sharded, normed input before its
column-parallel GEMMs (QKV; MLP in) and reduce-scatters the output of its row-parallel GEMM
(attention out; MLP out). The backward runs the transposes: an all-gather of the output
gradient before the row-parallel GEMM's dgrad, and a reduce-scatter of the input gradient the
column-parallel dgrads produce. Without sequence parallelism each pair is one all-reduce
(Shoeybi et al. 2019, arXiv:1909.08053). Recomputation re-runs forward collectives:

- ``full``: the whole forward, so its four collectives (two all-reduces without SP) again
  (Rajbhandari et al. 2020, Sec. 8: "two all-reduce for forward re-computation");
- ``op`` (torchtitan's per-op policy, torchtitan/models/llama3/parallelize_llama.py ``_save_list``
  at commit 820504e, the one the dev file's runs used): the reduce-scatter outputs are saved
  (``_c10d_functional.reduce_scatter_tensor`` is in the list), the all-gathers are not, so the
  backward re-gathers both blocks' inputs to recompute the matmuls it does not keep;
- ``selective`` (Megatron): the attention core only, no collective.

Element type: 2 bytes, except with torchtitan's float8 *tensorwise* TP (torchao
``Float8ColwiseParallel`` / ``PrepareFloat8ModuleInput`` cast the input "before the all-gather
... so that if there are multiple float8 users of the input activation, we perform fp8
allgather only once", and ``Float8RowwiseParallel`` casts the output gradient before its
backward all-gather): every all-gather moves 1-byte elements, the reduce-scatters stay bf16.
torchtitan's rowwise recipe "use[s] regular TP and all-gather happens in high precision"
(parallelize_llama.py at 820504e).

Which GEMM a collective is fused with under async TP (PyTorch Inductor's micro-pipeline pass,
torch/_inductor/fx_passes/micro_pipeline_tp.py): an all-gather with the matmuls that take the
gathered tensor as their left operand, a reduce-scatter with the one matmul that produces its
input (read at pytorch/pytorch 5f65158a; the fused ops are ``symm_mem.fused_all_gather_matmul``
/ ``fused_matmul_reduce_scatter`` and their scaled-mm forms). Hence:

- the forward all-gather with the block's column-parallel GEMMs, unless the gathered tensor is
  cast first (rowwise fp8: the consumer is the cast, not a matmul; "the all-gather-matmul
  patterns were NOT being fused properly" with rowwise scales, pytorch/pytorch issue 149990,
  while the matmul-reduce-scatters were);
- the forward reduce-scatter with the row-parallel GEMM (its producer in every recipe);
- the backward all-gather with the row-parallel dgrad, unless cast after the gather (rowwise);
- the backward reduce-scatter with the column-parallel dgrad only where that is one GEMM: where
  the projections are separate modules (torchtitan's Llama: ``wq``, ``wk``, ``wv`` and ``w1``,
  ``w3``; ``KernelSet.separate_projections``) the input gradient is the *sum* of their dgrads,
  no single matmul produces it, and the reduce-scatter stays exposed;
- a recomputed all-gather with the share of its consumers the recomputation re-runs.

MoE layers keep the same collectives; their MLP-block pairs fuse with the shared experts' GEMMs
where there are any (the routed experts run on dispatched tokens).

Megatron-Core's all-to-all token dispatcher (``routed_top_k``; issue 39, the Grok-1 DGX Cloud
runs): the routed experts' linears do no TP communication of their own; the dispatcher
all-gathers the dispatched tokens over the TP group after the expert-parallel all-to-all
(``gather_from_sequence_parallel_region`` in ``MoEAlltoAllTokenDispatcher``, then the expert
GEMMs) and reduce-scatters the experts' output before the combine all-to-all; the backward
runs the transposes. These carry the routed copies, top_k x the layer's sequence-parallel
tokens (with capacity padding every expert gets exactly its mean share), and no GEMM is fused
with them (Transformer Engine's userbuffer overlap belongs to the non-expert linears), so they
are exposed. They replace the MLP pair of a MoE layer without shared experts; a shared expert
(its own sequence-parallel MLP) keeps the layer's pair.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from costmodels.llm.linear_shapes import op_recompute_share
from costmodels.llm.shapes import TransformerShape


@dataclass(frozen=True)
class TPCollective:
    """One TP collective of a layer and micro-batch (module docstring)."""

    kind: str  # "all-gather" | "reduce-scatter" | "all-reduce"
    phase: str  # "forward" | "backward" | "recompute"
    element_bytes: float  # 2 (bf16) or 1 (float8 tensorwise all-gathers)
    gemms: tuple[tuple[str, float], ...] = ()  # (GEMM kernel name, share run fused); () = none
    layers: str = "all"  # the layers that run it: "all", "dense" or "moe" (routed tokens)
    rows: float = 1.0  # its volume in the layer's sequence-parallel activations (top_k: routed)

    def runs_in(self, moe: bool | None) -> bool:
        """Whether a MoE (``moe``) or dense layer runs it (None: a layer of any kind)."""
        return moe is None or self.layers == "all" or (self.layers == "moe") == moe


def _consumers(shape: TransformerShape, block: str) -> tuple[str, ...]:
    if block == "mlp":
        return ("mlp-in", "shared-expert-in")
    if shape.mla is not None:
        return ("q-a", "kv-a") if shape.mla.q_lora_rank else ("q", "kv-a")
    return ("qkv",)


def _producer(block: str) -> tuple[str, ...]:
    return ("mlp-out", "shared-expert-out") if block == "mlp" else ("attention-out",)


@lru_cache(maxsize=512)
def tp_collectives(
    shape: TransformerShape,
    recompute: str,
    sequence_parallel: bool,
    fp8_recipe: str | None = None,
    separate_projections: bool = False,
    torchao_tp: bool = False,
    routed_top_k: int = 0,
    shared_experts: bool = False,
) -> tuple[TPCollective, ...]:
    """Every TP collective of one layer and micro-batch (module docstring). ``fp8_recipe``: the
    float8 recipe of an fp8 step (None: 16-bit); ``torchao_tp``: float8 TP as torchtitan runs
    it (tensorwise: all-gathers in float8); ``separate_projections``: q/k/v and gate/up are
    separate linear modules; ``routed_top_k`` > 0: MoE layers gather and scatter that many
    routed copies of their tokens (Megatron-Core's all-to-all dispatcher, module docstring), of
    a model with (``shared_experts``) or without shared experts."""
    out: list[TPCollective] = []
    fp8_gather = torchao_tp and fp8_recipe == "tensorwise"
    cast_after_gather = fp8_recipe == "rowwise"
    gather_bytes = 1.0 if fp8_gather else 2.0
    mlp_start = 0  # where the MLP block's collectives begin in ``out``
    for block in ("attention", "mlp"):
        mlp_start = len(out) if block == "mlp" else mlp_start
        consumers = tuple((n, 1.0) for n in _consumers(shape, block))
        producer = tuple((n, 1.0) for n in _producer(block))
        if not sequence_parallel:
            out.append(TPCollective("all-reduce", "forward", 2.0))
            out.append(TPCollective("all-reduce", "backward", 2.0))
            if recompute == "full":
                out.append(TPCollective("all-reduce", "recompute", 2.0))
            continue
        fused_gather = () if cast_after_gather else consumers
        forward = [TPCollective("all-gather", "forward", gather_bytes, fused_gather),
                   TPCollective("reduce-scatter", "forward", 2.0, producer)]  # fmt: skip
        out += forward
        if recompute == "full":
            out += [TPCollective(c.kind, "recompute", c.element_bytes, c.gemms) for c in forward]
        elif recompute == "op":
            shares = tuple((n, op_recompute_share(n, shape)) for n, _ in fused_gather)
            out.append(TPCollective("all-gather", "recompute", gather_bytes,
                                    tuple(x for x in shares if x[1] > 0)))  # fmt: skip
        dgrads = tuple((f"{n}-dgrad", 1.0) for n, _ in consumers)
        out.append(TPCollective("all-gather", "backward", gather_bytes, () if cast_after_gather
                                else tuple((f"{n}-dgrad", 1.0) for n, _ in producer)))  # fmt: skip
        out.append(TPCollective("reduce-scatter", "backward", 2.0,
                                () if separate_projections else dgrads))  # fmt: skip
    if routed_top_k > 0 and sequence_parallel:
        out = _with_routed(out, mlp_start, routed_top_k, shared_experts, recompute == "full")
    return tuple(out)


def _with_routed(out: list[TPCollective], mlp_start: int, top_k: int, shared: bool,
                 full: bool) -> list[TPCollective]:  # fmt: skip
    """The schedule with the dispatcher's routed-token collectives of MoE layers (module
    docstring); the MLP block's collectives (from ``mlp_start``) then run in dense layers only,
    unless there are shared experts."""
    if not shared:
        out = out[:mlp_start] + [replace(c, layers="dense") for c in out[mlp_start:]]
    phases = ["forward", "backward"] + (["recompute"] if full else [])
    for phase in phases:
        for kind in ("all-gather", "reduce-scatter"):
            out.append(TPCollective(kind, phase, 2.0, (), layers="moe", rows=float(top_k)))
    return out
