"""Seconds of one engine iteration: a mixed batch of decode tokens and prefill chunks through
every layer of one TP x PP (x EP) instance, plus the engine's own overheads.

Continuous batching (Orca, Yu et al., OSDI '22: "iteration-level scheduling"; vLLM; TensorRT-LLM's
in-flight batching) runs, every iteration, one forward pass over all new tokens of the scheduled
sequences: one token per decoding sequence and a chunk of each prefilling prompt (Sarathi-Serve,
Agrawal et al., OSDI '24, arXiv:2403.02310: chunked prefills mixed with decodes under a token
budget). The linear layers see all T tokens as one GEMM (prompts are batched with each other and
with decodes), the attention core works per sequence. So an iteration costs::

    layers x [linear(T) + TP/EP collectives(T)] + layers x attention(decodes, chunks)
        + embedding(T) + logits(sampled) + iteration overhead + per-sequence overhead

``linear`` and the collectives come from the kernels of costmodels.serving.kernels (the GEMMs by
costmodels.serving.gemm, element-wise kernels by bytes over HBM, NCCL's model for every
collective), tabulated once per deployment over token counts and interpolated linearly between
grid points (1, 2, 3, 4, 6, 8, 12, 16 tokens, then steps of 25 %); attention is
costmodels.serving.attention_cost.
A MoE model's dense and expert layers are priced separately. With attention data parallelism
(ep > tp) the batch is split over the ``ep / tp`` groups and every expert sees all of it; with
``pp`` stages the batch runs as up to ``pp`` micro-batches and an iteration takes the longer of
one micro-batch's trip through every stage and the busiest stage's time for all of them (as
costmodels.serving.step prices a decode step). Kernel gaps and overheads are the engine model's
fitted constants (costmodels.serving.constants), the rest the training model's. A hybrid
Mamba-2 model's layers are priced by block kind, its SSM mixers per sequence
(costmodels.serving.hybrid).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from costmodels.llm.constants import StepConstants, default_constants
from costmodels.llm.kernels import Kernel
from costmodels.llm.layer_kinds import sliding_share
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.serving.attention_cost import attention_rates
from costmodels.serving.comm import layer_comm, pass_edges_comm
from costmodels.serving.constants import ServingConstants, serving_constants
from costmodels.serving.engine import EngineConfig
from costmodels.serving.hybrid import HybridLayers
from costmodels.serving.kernels import (
    DECODE_PARTITION,
    Work,
    first_stage_kernels,
    last_stage_kernels,
    layer_kernels,
)
from costmodels.serving.layers import StageLayers, model_layers, stage_layers
from costmodels.serving.layout import ServingLayout
from costmodels.serving.rocm import is_rocm, rocm_constants
from costmodels.serving.step import kernels_time
from costmodels.serving.tables import Table, Usage


@dataclass
class Batch:
    """What one iteration computes (sums over the scheduled sequences)."""

    tokens: int = 0  # new tokens through the linear layers
    sampled: int = 0  # sequences that produce a token this iteration
    seqs: int = 0  # sequences scheduled
    decode_seqs: int = 0
    decode_context: float = 0.0  # cached positions the decode queries read, summed
    prefill_tokens: int = 0
    prefill_pairs: float = 0.0  # causal query-key pairs of the prefill chunks
    prefill_keys: float = 0.0  # context positions the chunks read (prefix + chunk)
    prefill_blocks: int = 0  # blocks of 128 queries over all chunks


class IterationCost:
    """Seconds of one iteration of a deployment (module docstring). Every kernel's time is its
    launch gap plus a gap-free part, so an iteration is ``gap-free GPU time + kernel_gap x
    launches + overheads``: :meth:`parts` returns the first two, which lets a fit of the engine
    constants re-price a recorded schedule exactly (benchmarks/serving_fit.py)."""

    def __init__(
        self,
        shape: TransformerShape,
        layout: ServingLayout,
        cluster: LLMCluster,
        max_tokens: int,
        constants: ServingConstants | None = None,
        step: StepConstants | None = None,
    ) -> None:
        self.shape, self.layout, self.cluster = shape, layout, cluster
        self.engine = constants or serving_constants()
        # ROCm: decode attention costs a fitted time per sequence and query head on a GPU
        # beyond its HBM traffic (costmodels.serving.rocm)
        rocm = rocm_constants() if is_rocm(cluster.gpu) else None
        self.decode_head_s = rocm.decode_head_s * shape.heads / layout.tp if rocm else 0.0
        self.step = (step or default_constants()).with_values(kernel_launch_s=0.0)
        self.groups, self.pp = layout.groups, layout.pp
        self.layers = model_layers(shape)
        self.stages = stage_layers(shape, layout.pp)
        self.rates = attention_rates(
            shape, layout.tp, float(layout.kv_bytes), cluster.gpu, self.step, 0.0
        )
        top = max(16, math.ceil(max_tokens / self.groups))
        self.hybrid = HybridLayers(shape, layout, cluster, top, self.groups, self._time) \
            if shape.hybrid_pattern else None
        n = self.layers if self.hybrid is None else StageLayers(0, 0)  # hybrid: by kind
        self.dense = Table(lambda t: self._linear(t, False), top) if n.dense else None
        self.moe = Table(lambda t: self._linear(t, True), top) if n.moe else None
        self.edges = Table(self._edges, top)
        self.logits = Table(self._logits, top)
        self.hop = Table(self._hop, top) if layout.pp > 1 else None
        one = Work(1, 1, 1)
        self.launches_dense = self._launches(layer_kernels(shape, layout, one, 1, False, False))
        self.launches_moe = self._launches(layer_kernels(shape, layout, one, 1, True, False))
        edges = first_stage_kernels(shape, one) + last_stage_kernels(shape, layout.tp, one)
        self.launches_edges = self._launches(edges)
        self.usage: Usage | None = None
        # iterations above ``graph_tokens`` tokens launch every kernel from the host at
        # ``eager_host_s`` each (:meth:`limit_graphs`; None: all replayed from CUDA graphs)
        self.graph_tokens: int | None = None if layout.cuda_graphs else 0
        self.eager_host_s = self.step.host_seconds("pytorch")

    def for_engine(self, engine: EngineConfig) -> IterationCost:
        """This cost with the engine's kernel choices: its CUDA-graph limit
        (:meth:`limit_graphs`) and decode attention read per query head on
        ``per_head_decode_layers`` layers (:meth:`per_head_decode`)."""
        return self.limit_graphs(engine.cuda_graph_max_tokens).per_head_decode(
            engine.per_head_decode_layers)

    def per_head_decode(self, layers: int) -> IterationCost:
        """Decode attention of ``layers`` of the model run by a kernel of one thread block per
        query head (TensorRT-LLM's masked MHA, docs "Multi-Head, Multi-Query, and Group-Query
        Attention": "a single CUDA thread-block per head"): each of the query heads a GPU holds
        per KV head reads that head's cache, so those layers move ``group`` times the cache
        bytes (the L2 hits of heads reading the same keys together are not modelled)."""
        total = self.layers.total
        if layers <= 0 or self.shape.mla is not None or total <= 0:
            return self
        tp = self.layout.tp
        kv = self.shape.kv_heads or self.shape.heads
        group = max(1.0, (self.shape.heads // tp) / max(1, kv // tp))
        scale = 1.0 + min(layers, total) / total * (group - 1.0)
        r = self.rates
        self.rates = replace(r, decode_bytes_per_position=r.decode_bytes_per_position * scale)
        return self

    def limit_graphs(self, max_tokens: int | None) -> IterationCost:
        """This cost with an engine's CUDA-graph limit: iterations of more than ``max_tokens``
        tokens launch their kernels from the host. vLLM V1 captures piecewise graphs of its
        torch.compile'd model up to its largest capture size and runs larger batches through
        the same compiled code without graphs: torch.compile's host cost per kernel
        (costmodels.llm.constants ``host_seconds``). Without CUDA graphs at all (the layout's
        ``cuda_graphs`` off, ``--enforce-eager``) every iteration pays eager PyTorch's."""
        if max_tokens is not None and self.layout.cuda_graphs:
            self.graph_tokens = max_tokens
            self.eager_host_s = self.step.host_seconds("pytorch-compile")
        return self

    @staticmethod
    def _launches(kernels: tuple) -> int:
        return sum(k.launches for k in kernels)

    # -- tabulated parts, one GPU of one attention group, without launch gaps ----------------
    def _gemm_scale(self, kernel: Kernel) -> float:
        c = self.engine
        scale = {"fp8": c.fp8_gemm_efficiency, "fp4": c.fp4_gemm_efficiency}.get(kernel.dtype, 1.0)
        return scale * c.moe_gemm_efficiency if kernel.name.startswith("expert-") else scale

    def _time(self, kernels: tuple[Kernel, ...]) -> float:
        return kernels_time(kernels, self.cluster.gpu, self.step, 0.0, self._gemm_scale).total

    def _linear(self, t: int, moe: bool) -> float:
        kernels = layer_kernels(
            self.shape, self.layout, Work(t, 1, 1), t * self.groups, moe, attention=False
        )
        busy = self._time(kernels)
        comm = layer_comm(self.shape, self.layout, self.cluster, t, moe)
        return busy + comm.tp + comm.ep

    def _edges(self, t: int) -> float:
        return self._time(first_stage_kernels(self.shape, Work(t, 1, 1)))

    def _logits(self, s: int) -> float:
        last = last_stage_kernels(self.shape, self.layout.tp, Work(s, 1, 1))
        _, gather = pass_edges_comm(self.shape, self.layout, self.cluster, s, s)
        return self._time(last) + gather

    def _hop(self, t: int) -> float:
        pp_s, _ = pass_edges_comm(self.shape, self.layout, self.cluster, t, t)
        return pp_s

    # -- one iteration -------------------------------------------------------------------------
    def micro_batches(self, b: Batch) -> int:
        return max(1, min(self.pp, b.seqs))

    def _attention(self, b: Batch, split: float, context: float) -> tuple[float, int]:
        r = self.rates
        time, launches = 0.0, 0
        share, w = sliding_share(self.shape), self.shape.sliding_window
        if b.decode_seqs:
            seqs = b.decode_seqs / split
            time += r.decode_s(seqs, context / split) + seqs * self.decode_head_s
            if share:  # sliding-window layers read at most the window per sequence (issue 39)
                windowed = seqs * min(context / b.decode_seqs, w)
                time += share * (r.decode_s(seqs, windowed) - r.decode_s(seqs, context / split))
            launches += 2 if context / b.decode_seqs > DECODE_PARTITION else 1
        if b.prefill_tokens:
            parts = (b.prefill_pairs, b.prefill_tokens, b.prefill_keys, b.prefill_blocks)
            full = r.prefill_s(*(x / split for x in parts))
            time += full
            if share:  # each new token scores at most w keys; a chunk reads its last w only
                pairs = min(b.prefill_pairs, b.prefill_tokens * w)
                keys = min(b.prefill_keys, b.prefill_tokens + b.seqs * w)
                windowed = r.prefill_s(*(x / split for x in (pairs, b.prefill_tokens, keys,
                                                                b.prefill_blocks)))  # fmt: skip
                time += share * (windowed - full)
            launches += 1
        return time, launches

    def parts(
        self, b: Batch, context: float | None = None, weight: float = 1.0
    ) -> tuple[float, int]:
        """(gap-free GPU seconds of the forward pass, kernel launches on the critical path);
        ``context`` overrides b.decode_context; ``weight``: how many iterations this evaluation
        stands for in the usage record (:class:`Usage`), when one is kept."""
        if b.tokens <= 0:
            return 0.0, 0
        micro = self.micro_batches(b)
        split = float(self.groups * micro)
        t = b.tokens / split
        dense = self.dense(t) if self.dense else 0.0
        moe = self.moe(t) if self.moe else 0.0
        att, att_launches = self._attention(
            b, split, b.decode_context if context is None else context
        )
        sampled = max(1.0, b.sampled / split)
        edges = self.edges(t) + self.logits(sampled)
        n, hy = self.layers, self.hybrid
        if hy is None:
            stage = lambda c: c.dense * dense + c.moe * moe + c.total * att  # noqa: E731
            per_layer = n.dense * self.launches_dense + n.moe * self.launches_moe
            per_layer += n.total * att_launches
        else:  # by block kind, the SSM mixers per sequence (costmodels.serving.hybrid)
            stage, per_layer = hy.stage(n, t, att, att_launches, b.decode_seqs / split,
                                        (b.seqs - b.decode_seqs) / split, b.prefill_tokens / split)
        if self.usage is not None and self.pp == 1:  # untabulated parts as attention seconds
            self.usage.add(self, t, sampled, stage(n) - n.dense * dense - n.moe * moe, weight)
        launches = per_layer + self.launches_edges
        trip = stage(n) + edges
        if self.pp == 1:
            return trip, launches
        hop = self.hop(t) if self.hop else 0.0
        busiest = max(stage(s) for s in self.stages)
        stage_launches = launches / self.pp  # the busiest stage's share, approximately
        piped = micro * (busiest + edges + hop / self.pp)
        if trip + hop >= piped:
            return trip + hop, launches
        return piped, round(micro * stage_launches)

    def gpu_seconds(self, b: Batch, context: float | None = None) -> float:
        """The forward pass alone (no host overheads)."""
        busy, launches = self.parts(b, context)
        return self.launched_s(b, busy, launches)

    def launched_s(self, b: Batch, busy, launches):  # noqa: ANN001, ANN201 - floats or arrays
        """Seconds of a forward pass with ``busy`` gap-free GPU seconds and ``launches``
        kernels: replayed from a CUDA graph, each kernel adds the fitted gap; launched from the
        host (``b.tokens`` above ``graph_tokens``), the GPU waits for the host whenever issuing
        the kernels takes longer than running them."""
        graphed = busy + launches * self.engine.kernel_gap_s
        if self.graph_tokens is None or b.tokens <= self.graph_tokens:
            return graphed
        host = launches * self.eager_host_s
        return np.maximum(graphed, host) if np.ndim(graphed) else max(graphed, host)

    def moe_token_layers(self, b: Batch) -> float:
        """Tokens one GPU pushes through MoE layers in this iteration (tokens x MoE layers)."""
        return self.layers.moe * b.tokens / self.groups

    def overhead_s(self, b: Batch) -> float:
        c = self.engine
        return (
            c.iteration_overhead_s
            + c.sequence_overhead_s * b.seqs
            + c.moe_token_overhead_s * self.moe_token_layers(b)
        )

    def seconds(self, b: Batch) -> float:
        return self.gpu_seconds(b) + self.overhead_s(b)

    def decode_parts(self, b: Batch, steps: int) -> tuple[np.ndarray, np.ndarray]:
        """(gap-free seconds, launches) of ``steps`` decode-only iterations from ``b``: every
        sequence adds one cached position per step. Attention is affine in the context within a
        window, so the steps are interpolated between the window's first and last."""
        first = self.parts(b, weight=1.0 if steps == 1 else steps / 2)
        if steps == 1:
            return np.array([first[0]]), np.array([first[1]], dtype=float)
        last = self.parts(b, b.decode_context + b.decode_seqs * (steps - 1), weight=steps / 2)
        share = np.arange(steps, dtype=float) / (steps - 1)
        return first[0] + (last[0] - first[0]) * share, first[1] + (last[1] - first[1]) * share

    def decode_steps(self, b: Batch, steps: int) -> np.ndarray:
        """Seconds of ``steps`` decode-only iterations from ``b`` (overheads included)."""
        busy, launches = self.decode_parts(b, steps)
        return self.launched_s(b, busy, launches) + self.overhead_s(b)
