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
"""

from __future__ import annotations

from dataclasses import dataclass
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
) -> tuple[TPCollective, ...]:
    """Every TP collective of one layer and micro-batch (module docstring). ``fp8_recipe``: the
    float8 recipe of an fp8 step (None: 16-bit); ``torchao_tp``: float8 TP as torchtitan runs
    it (tensorwise: all-gathers in float8); ``separate_projections``: q/k/v and gate/up are
    separate linear modules."""
    out: list[TPCollective] = []
    fp8_gather = torchao_tp and fp8_recipe == "tensorwise"
    cast_after_gather = fp8_recipe == "rowwise"
    gather_bytes = 1.0 if fp8_gather else 2.0
    for block in ("attention", "mlp"):
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
    return tuple(out)
