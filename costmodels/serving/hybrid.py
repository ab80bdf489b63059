"""Serving a hybrid Mamba-2 / attention / MLP model (issue 39: Nemotron-H, Nemotron 3): the
kernels and collectives of each kind of layer on one GPU, and the engine model's rates for the
Mamba-2 layers' per-sequence work.

A hybrid layer is one norm and one mixer (Megatron's hybrid_override_pattern; shapes.BLOCK_KINDS):

* ``*`` attention and ``-`` / ``E`` MLP layers are the matching half of a serving transformer
  layer (costmodels.serving.kernels): the norm, projections, attention core and cache write up to
  the second norm, or the second norm and the MLP (dense or experts); a GPT-style residual add
  and the fp8/fp4 quantisation of the output projection's input follow each side's own width.
* ``M`` (costmodels/llm/mamba.py; heads and groups split over TP as training splits them):
  the norm, in_proj (T x (2 d + 2 G N + H) / tp x h), the causal conv1d with SiLU (read and write
  conv_dim / tp channels per token, 16-bit), the SSM mixer, the gated RMSNorm (reads y and z,
  writes y: 6 bytes per element) and out_proj (T x h x d / tp).
* The SSM mixer, priced per sequence like the attention core:

  - decode (vLLM's ``selective_state_update`` and ``causal_conv1d_update``): each sequence's
    token reads and writes its whole state (costmodels.serving.ssm_state: H P N + (K - 1)
    conv_dim per layer, over tp), reads x, B, C and dt and writes y: memory-bound, about
    ``4 H P N`` FLOPs (the decay-and-add update and the C h read-out), two launches;
  - prefill (the SSD chunked scan, Dao & Gu, arXiv:2405.21060: vLLM's and Megatron's
    ``mamba_chunk_scan_combined``, five kernels): the four batched products of
    ``mamba.ssd_gemms`` at the GEMM model's rate for their small shapes, the state passing
    between chunks (N x P per head per chunk, read and written) and the cumulative decays, plus
    each prefilling sequence's initial state read and final state written.

Collectives: one TP all-reduce of T x h x 2 bytes after every mixer (attention-out, out_proj,
MLP-out: Megatron's and vLLM's row-parallel output), and for an E layer with ep > 1 the expert
dispatch and combine instead of the MLP's all-reduce (costmodels.serving.comm.layer_comm).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from costmodels.llm.kernel_time import Seconds
from costmodels.llm.kernels import GemmShape, Kernel, gemm_kernel, memory_kernel
from costmodels.llm.layer_kinds import LayerCounts
from costmodels.llm.mamba import check_tp, ssd_gemms
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.serving.comm import LayerComm, layer_comm, spans, tp_allreduce_seconds
from costmodels.serving.kernels import ACT, Work, layer_kernels
from costmodels.serving.layers import stage_layers
from costmodels.serving.layout import ServingLayout
from costmodels.serving.precision import gemm_dtype
from costmodels.serving.ssm_state import state_bytes_per_layer
from costmodels.serving.tables import Table

PREFILL_SCAN_LAUNCHES = 5  # chunk cumsum, chunk state, state passing, bmm, chunk scan
DECODE_UPDATE_LAUNCHES = 2  # causal_conv1d_update, selective_state_update
RATE_SEQS = 64  # sequences at which the per-sequence rates are taken (both linear in them)

TimeOf = Callable[[tuple[Kernel, ...]], float]


def mixer_kernels(shape: TransformerShape, tp: int, decode_seqs: float, prefill_seqs: float,
                  prefill_tokens: float) -> tuple[Kernel, ...]:  # fmt: skip
    """The SSM mixer of one M layer on one GPU (module docstring): ``decode_seqs`` one-token
    updates, and ``prefill_seqs`` sequences' chunks of ``prefill_tokens`` tokens in all."""
    m = shape.mamba
    assert m is not None  # only hybrid models with M layers call this
    state = state_bytes_per_layer(shape, tp)
    io = ACT * (m.conv_dim + m.heads + m.inner) / tp  # x, B, C, dt read; y written
    out: list[Kernel] = []
    if decode_seqs > 0:
        flops = decode_seqs * 4.0 * m.heads * m.head_dim * m.state / tp
        out.append(Kernel("mamba-state-update", "attention", flops,
                          decode_seqs * (2.0 * state + io), launches=DECODE_UPDATE_LAUNCHES))
    if prefill_seqs > 0 and prefill_tokens > 0:
        seqs = max(1, round(prefill_seqs))
        per_seq = max(1, round(prefill_tokens / seqs))
        for g in ssd_gemms(m, seqs, per_seq, tp):
            out.append(gemm_kernel(g.name, "attention", GemmShape(g.m, g.n, g.k, g.batch), "bf16"))
        chunks = seqs * -(-per_seq // m.chunk)
        passing = 8.0 * chunks * m.heads * m.head_dim * m.state / tp  # fp32, read + write
        decay = 8.0 * prefill_tokens * m.heads / tp
        out.append(memory_kernel("ssd-state-passing", passing + decay + 2.0 * state * seqs,
                                 launches=PREFILL_SCAN_LAUNCHES - 4))  # fmt: skip
    return tuple(out)


def _mamba_kernels(shape: TransformerShape, layout: ServingLayout, work: Work,
                   mixer: bool) -> tuple[Kernel, ...]:  # fmt: skip
    m = shape.mamba
    assert m is not None
    h, t, tp = shape.hidden, work.tokens, layout.tp
    check_tp(m, tp)
    dtype, wb = gemm_dtype(layout.precision), float(layout.weight_bytes)
    norm_bytes = 8.0 if shape.gated_mlp else 4.0  # as the transformer layer's norm
    out = [memory_kernel("norm", norm_bytes * t * h),
           gemm_kernel("mamba-in-proj", "gemm", GemmShape(t, m.in_proj_width // tp, h, 1, wb, ACT),
                       dtype),
           memory_kernel("mamba-conv1d-silu", 4.0 * t * m.conv_dim / tp)]  # fmt: skip
    if mixer:
        decode = work.seqs if work.decode else 0
        prefill = (work.seqs, work.tokens) if not work.decode else (0, 0)
        out += mixer_kernels(shape, tp, decode, *prefill)
    out += [memory_kernel("mamba-gated-norm", 6.0 * t * m.inner / tp),
            gemm_kernel("mamba-out-proj", "gemm", GemmShape(t, h, m.inner // tp, 1, wb, ACT),
                        dtype)]  # fmt: skip
    if not shape.gated_mlp:
        out.append(memory_kernel("residual-add", 6.0 * t * h))
    if dtype in ("fp8", "fp4"):
        out.append(memory_kernel(f"{dtype}-quantize", 3.0 * t * m.inner / tp))
    return tuple(out)


def block_kernels(shape: TransformerShape, layout: ServingLayout, work: Work, total_tokens: int,
                  kind: str, mixer: bool = True) -> tuple[Kernel, ...]:  # fmt: skip
    """Forward kernels of one hybrid layer of ``kind`` on one GPU; ``mixer=False`` leaves out
    the per-sequence part (attention core or SSM mixer), priced per sequence by the engine."""
    if kind == "M":
        return _mamba_kernels(shape, layout, work, mixer)
    full = layer_kernels(shape, layout, work, total_tokens, kind == "E", mixer)
    second = [i for i, k in enumerate(full) if k.name == "norm"][1]
    side = full[:second] if kind == "*" else full[second:]
    out = []
    for k in side:
        if k.name.endswith("-quantize"):
            continue
        out.append(replace(k, bytes=k.bytes / 2, launches=1) if k.name == "residual-add" else k)
    if kind == "*" and not shape.gated_mlp:
        out.append(memory_kernel("residual-add", 6.0 * work.tokens * shape.hidden))
    dtype = gemm_dtype(layout.precision)
    if dtype in ("fp8", "fp4"):
        width = ([k for k in side if k.name == "attention-out"][0].gemm.k if kind == "*"
                 else [k for k in side if k.name == "mlp-out"][0].gemm.k if kind == "-" else 0)
        if width:
            out.append(memory_kernel(f"{dtype}-quantize", 3.0 * work.tokens * width))
    return tuple(out)


def block_comm(shape: TransformerShape, layout: ServingLayout, cluster: LLMCluster, tokens: int,
               kind: str) -> LayerComm:  # fmt: skip
    """TP and EP seconds of one hybrid layer of ``kind`` (module docstring)."""
    one = tp_allreduce_seconds(tokens * shape.hidden * ACT, spans(layout, cluster).tp, layout,
                               cluster)  # fmt: skip
    if kind != "E":
        return LayerComm(one, 0.0)
    full = layer_comm(shape, layout, cluster, tokens, True)  # attention's all-reduce + the MoE's
    return LayerComm(full.tp - one, full.ep)


def _kinds(shape: TransformerShape) -> tuple[str, ...]:
    return tuple(k for k in "M*-E" if k in shape.hybrid_pattern)


def pass_layers(shape: TransformerShape, layout: ServingLayout, cluster: LLMCluster, work: Work,
                total_tokens: int,
                time_of: Callable[[tuple[Kernel, ...]], Seconds]
                ) -> tuple[Seconds, float, float, float]:  # fmt: skip
    """One pass of ``work`` through every layer of a hybrid model (costmodels.serving.step):
    (compute by bucket, TP seconds, EP seconds, the busiest stage's layers with their
    collectives)."""
    compute, tp_s, ep_s = Seconds(), 0.0, 0.0
    per: dict[str, float] = {}
    counts = stage_layers(shape, 1)[0]
    for kind in _kinds(shape):
        sec = time_of(block_kernels(shape, layout, work, total_tokens, kind))
        comm = block_comm(shape, layout, cluster, work.tokens, kind)
        n = counts.of(kind)
        compute, tp_s, ep_s = compute + sec.scaled(n), tp_s + n * comm.tp, ep_s + n * comm.ep
        per[kind] = sec.total + comm.tp + comm.ep
    busiest = max(sum(n * per[k] for k, n in s.items()) for s in stage_layers(shape, layout.pp))
    return compute, tp_s, ep_s, busiest


@dataclass(frozen=True)
class MixerTime:
    seconds: float
    launches: int


class HybridLayers:
    """The engine model's pricing of a hybrid model's layers (costmodels.serving.iteration):
    per block kind, a table of its token-proportional kernels and collectives; per M layer, the
    SSM mixer at a decode rate per sequence and a prefill table over chunk tokens."""

    def __init__(self, shape: TransformerShape, layout: ServingLayout, cluster: LLMCluster,
                 top: int, groups: int, time_of: TimeOf) -> None:  # fmt: skip
        self.shape, self.layout, self.cluster, self.time_of = shape, layout, cluster, time_of
        self.groups = groups
        one = Work(1, 1, 1)
        self.tables = {k: Table(lambda t, k=k: self._linear(t, k), top) for k in _kinds(shape)}
        self.launches = {k: sum(x.launches for x in block_kernels(shape, layout, one, 1, k, False))
                         for k in self.tables}  # fmt: skip
        self.has_mamba = "M" in self.tables
        if self.has_mamba:
            tp = layout.tp
            self.decode_s_per_seq = time_of(mixer_kernels(shape, tp, RATE_SEQS, 0, 0)) / RATE_SEQS
            self.prefill = Table(lambda t: time_of(mixer_kernels(shape, tp, 0, 1, t)), top)

    def _linear(self, t: int, kind: str) -> float:
        kernels = block_kernels(self.shape, self.layout, Work(t, 1, 1), t * self.groups, kind,
                                False)  # fmt: skip
        comm = block_comm(self.shape, self.layout, self.cluster, t, kind)
        return self.time_of(kernels) + comm.tp + comm.ep

    def mixer(self, decode_seqs: float, prefill_seqs: float, prefill_tokens: float) -> MixerTime:
        """One M layer's SSM mixer for a batch on one GPU: decodes at the per-sequence rate,
        prefill chunks from the one-sequence table, each further prefilling sequence one state
        read and written (the decode rate)."""
        if not self.has_mamba:
            return MixerTime(0.0, 0)
        seconds, launches = 0.0, 0
        if decode_seqs > 0:
            seconds += decode_seqs * self.decode_s_per_seq
            launches += DECODE_UPDATE_LAUNCHES
        if prefill_tokens > 0:
            extra = max(0.0, prefill_seqs - 1)
            seconds += self.prefill(prefill_tokens) + extra * self.decode_s_per_seq
            launches += PREFILL_SCAN_LAUNCHES
        return MixerTime(seconds, launches)

    def stage(self, counts: LayerCounts, t: float, attention_s: float, attention_launches: int,
              decode_seqs: float, prefill_seqs: float,
              prefill_tokens: float) -> tuple[Callable[[LayerCounts], float], int]:  # fmt: skip
        """(seconds of any stage's layers, launches of ``counts``' layers) for one batch on one
        GPU (``t`` tokens; the attention core's and the SSM mixers' per-sequence work)."""
        mix = self.mixer(decode_seqs, prefill_seqs, prefill_tokens)
        return (lambda c: self.layers_s(c, t, attention_s, mix),
                self.launches_of(counts, attention_launches, mix))  # fmt: skip

    def layers_s(self, counts: LayerCounts, t: float, attention_s: float,
                 mixer: MixerTime) -> float:  # fmt: skip
        """Seconds of ``counts``' layers at ``t`` tokens per GPU: each kind's table, the
        attention core on * layers, the SSM mixer on M layers."""
        linear = sum(n * self.tables[k](t) for k, n in counts.items())
        return linear + counts.of("*") * attention_s + counts.of("M") * mixer.seconds

    def launches_of(self, counts: LayerCounts, attention_launches: int,
                    mixer: MixerTime) -> int:  # fmt: skip
        per = sum(n * self.launches[k] for k, n in counts.items())
        return per + counts.of("*") * attention_launches + counts.of("M") * mixer.launches
