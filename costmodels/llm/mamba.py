"""Mamba-2 state-space layers (issue 39: Nemotron-H, Nemotron 3): parameters, FLOPs and GEMM
shapes per token, the activations a layer keeps and the recurrent state it carries.

Sources. Dao & Gu, "Transformers are SSMs: Generalized Models and Efficient Algorithms Through
Structured State Space Duality", ICML 2024, arXiv:2405.21060 (the Mamba-2 block and the SSD
algorithm: split the sequence into chunks of Q tokens; 1. the diagonal blocks in quadratic,
attention-like form, 2. each chunk's final state from its inputs, 3. a short scan passing the
states from chunk to chunk, 4. each chunk's output from the state it starts with; training costs
Theta(T N^2) at Q = N, and the work is matrix multiplications). Tensor parallelism as Tri Dao's
"State Space Duality (Mamba-2) Part IV - The Systems" (tridao.me, 2024) states it: the input and
output projections are split over the TP ranks by head, with a grouped norm whose groups divide
the TP degree, so a layer needs one all-reduce (forward) like an attention or MLP block.

One layer with hidden h, ``heads`` H of width P (d = H P = expand x h), ``groups`` G of B/C
projections of state size N, a depthwise causal convolution of width K over x, B and C
(conv_dim = d + 2 G N), chunk Q:

==============  =============================================  ===========================
part            parameters                                      forward FLOPs per token
==============  =============================================  ===========================
in_proj         h (2 d + 2 G N + H)   (z, x, B, C, dt)          2 h (2 d + 2 G N + H)
conv1d          conv_dim K + conv_dim (bias)                    (element-wise, not counted)
dt_bias, A, D   3 H                                             -
SSD step 1      -                                               2 Q N G + 2 Q P H
SSD steps 2, 4  -                                               4 N P H
gated norm      d                                               (element-wise)
out_proj        d h                                             2 d h
==============  =============================================  ===========================

Step 1 scores C B^T once per group (Q x Q over N) and applies it to each head's x (Q x P over
Q); step 2 forms each chunk's N x P state per head, step 4 reads it back; step 3 (T / Q chunk
states) is left out of the FLOPs like every element-wise op (costmodels/llm/compute.py counts
matrix multiplications only). The full Q x Q block is counted, as the attention formulas count
the full s x s matrix. Nemotron-H 8B (h 4096, H 128, P 64, G 8, N 128, Q 128): in_proj 152.0
MFLOP, out_proj 67.1, SSD 6.6 per token and layer.

No KV cache: a Mamba layer carries a fixed state per sequence, H P N of the SSM (fp32 in vLLM's
and Megatron's kernels) and (K - 1) conv_dim of the convolution (``state_bytes``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mamba2:
    """The Mamba-2 mixer of a hybrid model, named as the nemotron_h config.json names it."""

    heads: int  # mamba_num_heads (H)
    head_dim: int  # mamba_head_dim (P)
    state: int  # ssm_state_size (N)
    groups: int  # n_groups (G): B and C are shared by the heads of a group
    conv_kernel: int = 4  # conv_kernel (K)
    chunk: int = 128  # chunk_size (Q) of the SSD algorithm

    def __post_init__(self) -> None:
        for name in ("heads", "head_dim", "state", "groups", "conv_kernel", "chunk"):
            if getattr(self, name) < 1:
                raise ValueError(f"Mamba2.{name} must be >= 1, got {getattr(self, name)}")
        if self.heads % self.groups:
            raise ValueError(f"Mamba2: {self.groups} groups do not divide {self.heads} heads")

    @property
    def inner(self) -> int:
        """d = H x P, the width of x, z and the SSM output."""
        return self.heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the causal convolution: x, B and C."""
        return self.inner + 2 * self.groups * self.state

    @property
    def in_proj_width(self) -> int:
        """Output width of in_proj: z, x, B, C and one dt per head."""
        return 2 * self.inner + 2 * self.groups * self.state + self.heads


def mamba_parameters(m: Mamba2, hidden: int) -> int:
    """Weights of one Mamba-2 mixer (module table; its block norm is the caller's)."""
    conv = m.conv_dim * m.conv_kernel + m.conv_dim
    return hidden * m.in_proj_width + conv + 3 * m.heads + m.inner + m.inner * hidden


def ssd_flops_per_token(m: Mamba2) -> float:
    """Forward FLOPs of the SSD chunked scan per token (steps 1, 2 and 4; module docstring)."""
    diagonal = 2.0 * m.chunk * m.state * m.groups + 2.0 * m.chunk * m.head_dim * m.heads
    return diagonal + 4.0 * m.state * m.head_dim * m.heads


def mamba_flops_per_token(m: Mamba2, hidden: int) -> float:
    """Forward FLOPs of one Mamba-2 layer per token: in_proj, SSD and out_proj."""
    return 2.0 * hidden * m.in_proj_width + ssd_flops_per_token(m) + 2.0 * m.inner * hidden


def check_tp(m: Mamba2, tp: int) -> None:
    """Megatron's Mamba TP splits heads and groups: tp must divide both (Megatron-LM
    megatron/core/ssm/mamba_mixer.py asserts ``ngroups`` and ``nheads`` % TP size == 0)."""
    if m.groups % tp or m.heads % tp:
        raise ValueError(f"--tp {tp} must divide the Mamba-2 layers' {m.groups} groups and "
                         f"{m.heads} heads (Megatron splits them over the TP ranks)")  # fmt: skip


@dataclass(frozen=True)
class SsdGemm:
    """One batched matrix product of the SSD algorithm on one GPU: ``batch`` of m x n x k."""

    name: str
    m: int
    n: int
    k: int
    batch: int


def ssd_gemms(m: Mamba2, micro_batch: int, seq: int, tp: int) -> list[SsdGemm]:
    """The SSD's matrix products for ``micro_batch`` sequences of ``seq`` tokens on one TP rank
    (heads and groups split over ``tp``); a partial last chunk counts as a whole one."""
    chunks = micro_batch * -(-seq // m.chunk)
    q, heads, groups = min(m.chunk, seq), m.heads // tp, m.groups // tp
    return [
        SsdGemm("ssd-scores", q, q, m.state, chunks * groups),  # C B^T per group
        SsdGemm("ssd-diagonal", q, m.head_dim, q, chunks * heads),  # masked scores x X
        SsdGemm("ssd-chunk-state", m.state, m.head_dim, q, chunks * heads),  # B^T X
        SsdGemm("ssd-state-output", q, m.head_dim, m.state, chunks * heads),  # C h
    ]


def activation_bytes_per_token(m: Mamba2, tp: int) -> float:
    """16-bit activations one Mamba-2 mixer keeps per token for its backward pass on one TP rank:
    in_proj's output (z, x, B, C, dt), the convolution's output, the SSD output and the gated
    norm's output (Megatron's MambaMixer with the fused chunk-scan kernel, which saves its inputs
    and recomputes the chunk states)."""
    kept = m.in_proj_width + m.conv_dim + 2 * m.inner
    return 2.0 * kept / tp


def state_bytes(m: Mamba2, tp: int = 1, ssm_bytes: float = 4.0, conv_bytes: float = 2.0) -> float:
    """The recurrent state one sequence carries through one Mamba-2 layer on one TP rank: the
    SSM state H P N (fp32) and the last K - 1 inputs of the convolution (16-bit)."""
    ssm = m.heads * m.head_dim * m.state * ssm_bytes
    conv = (m.conv_kernel - 1) * m.conv_dim * conv_bytes
    return (ssm + conv) / tp
