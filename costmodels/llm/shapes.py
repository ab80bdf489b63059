"""The inputs of every large-model cost function: transformer shape, parallel layout, cluster.

Ranks are placed TP-innermost: tensor-parallel groups inside a node, then context/expert,
data-parallel and pipeline stages outward (Megatron-LM's default order), unless a function says
otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from costmodels.hardware import GPU

Recompute = Literal["none", "selective", "full"]


@dataclass(frozen=True)
class TransformerShape:
    """A decoder-only transformer (GPT or Llama style)."""

    layers: int
    hidden: int
    heads: int
    seq_len: int
    ffn: int | None = None  # default 4 * hidden (GPT); Llama's SwiGLU sizes differ
    vocab: int = 51200
    kv_heads: int | None = None  # grouped-query attention; default = heads
    gated_mlp: bool = False  # SwiGLU (three FFN matrices) as in Llama
    tied_embeddings: bool = True  # GPT ties input and output embeddings; Llama does not
    experts: int = 1  # MoE: experts per MoE layer (1 = dense)
    top_k: int = 1  # experts each token is routed to

    def __post_init__(self) -> None:
        for name in ("layers", "hidden", "heads", "seq_len", "vocab", "experts", "top_k"):
            if getattr(self, name) < 1:
                raise ValueError(f"TransformerShape.{name} must be >= 1, got {getattr(self, name)}")
        if self.hidden % self.heads:
            raise ValueError(f"hidden {self.hidden} is not divisible by heads {self.heads}")
        if self.kv_heads is not None and self.heads % self.kv_heads:
            raise ValueError(f"heads {self.heads} is not divisible by kv_heads {self.kv_heads}")

    @property
    def ffn_size(self) -> int:
        return self.ffn if self.ffn is not None else 4 * self.hidden

    @property
    def kv_head_count(self) -> int:
        return self.kv_heads if self.kv_heads is not None else self.heads


@dataclass(frozen=True)
class Layout:
    """How the model is split: TP x PP x DP (x CP x EP), batches and memory savings."""

    tp: int
    pp: int
    dp: int
    global_batch: int  # sequences per optimizer step
    micro_batch: int = 1  # sequences per micro-batch per pipeline
    interleave: int = 1  # virtual stages per GPU (interleaved 1F1B); 1 = plain 1F1B
    zero: Literal[0, 1, 2, 3] = 0  # ZeRO stage over the DP group (3 ~ FSDP full shard)
    sequence_parallel: bool = False
    recompute: Recompute = "none"
    cp: int = 1  # context parallel
    ep: int = 1  # expert parallel (inside the DP group)
    schedule: Literal["gpipe", "1f1b", "interleaved"] = "1f1b"

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "global_batch", "micro_batch", "interleave", "cp", "ep"):
            if getattr(self, name) < 1:
                raise ValueError(f"Layout.{name} must be >= 1, got {getattr(self, name)}")
        if self.global_batch % (self.dp * self.micro_batch):
            raise ValueError(
                f"global_batch {self.global_batch} is not a multiple of dp x micro_batch "
                f"({self.dp} x {self.micro_batch})"
            )
        if self.zero not in (0, 1, 2, 3):
            raise ValueError(f"Layout.zero must be 0-3, got {self.zero}")
        if self.recompute not in ("none", "selective", "full"):
            raise ValueError(f"Layout.recompute must be none|selective|full: {self.recompute!r}")

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @property
    def micro_batches(self) -> int:
        """Micro-batches per pipeline per step (m)."""
        return self.global_batch // (self.dp * self.micro_batch)


@dataclass(frozen=True)
class LLMCluster:
    """Identical GPUs, gpus_per_node of them behind one fast intra-node fabric."""

    gpu: GPU
    gpus_per_node: int
    intra_bandwidth_Bps: float  # per GPU, per direction (NVLink/NVSwitch)
    inter_bandwidth_Bps: float  # per GPU, per direction (its share of the node's NICs)
    intra_latency_s: float = 2e-6
    inter_latency_s: float = 5e-6
    transport: str | None = None  # costmodels.nccl.transports key across nodes; None: RDMA

    def __post_init__(self) -> None:
        if self.gpus_per_node < 1:
            raise ValueError(f"gpus_per_node must be >= 1, got {self.gpus_per_node}")
        for name in ("intra_bandwidth_Bps", "inter_bandwidth_Bps"):
            if not getattr(self, name) > 0:
                raise ValueError(f"LLMCluster.{name} must be positive")
