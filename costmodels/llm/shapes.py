"""The inputs of every large-model cost function: transformer shape, parallel layout, cluster.

Ranks are placed TP-innermost: tensor-parallel groups inside a node, then context/expert,
data-parallel and pipeline stages outward (Megatron-LM's default order), unless a function says
otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from costmodels.hardware import GPU
from costmodels.llm.mamba import Mamba2

# none: keep every activation; selective: Megatron's attention-core recomputation (Korthikanti et
# al. 2022); op: torchtitan's per-op selective checkpointing (costmodels/llm/activations.py);
# full: every layer's forward re-run from its input (every ``recompute_every``-th layer only,
# torchtitan's per-layer selective checkpointing)
Recompute = Literal["none", "selective", "op", "full"]
RECOMPUTE_MODES: tuple[str, ...] = ("none", "selective", "op", "full")
MLP_KINDS: tuple[str, ...] = ("swiglu", "gelu", "relu2")  # issue 39: --mlp
POSITIONS: tuple[str, ...] = ("rope", "learned")  # issue 39: --position
# issue 39: a hybrid model's blocks, as Megatron's hybrid_override_pattern writes them: M a
# Mamba-2 mixer, * self-attention, - a dense MLP, E a mixture-of-experts MLP (one per block)
BLOCK_KINDS: str = "M*-E"


@dataclass(frozen=True)
class LatentAttention:
    """DeepSeek's multi-head latent attention (DeepSeek-V2, arXiv:2405.04434, Sec. 2.1; V3,
    arXiv:2412.19437, Sec. 2.1): queries through a rank-``q_lora_rank`` projection (0: none),
    keys and values through one shared latent of ``kv_lora_rank`` plus a decoupled rotary key of
    ``qk_rope_head_dim``; the cache keeps only those two per token and layer. Heads score with
    ``qk_nope_head_dim + qk_rope_head_dim`` and return ``v_head_dim`` values. Read by the serving
    model (costmodels.serving) and the training model (costmodels/llm/linear_shapes.py)."""

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int = 0

    def __post_init__(self) -> None:
        for name in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
            if getattr(self, name) < 1:
                raise ValueError(f"LatentAttention.{name} must be >= 1, got {getattr(self, name)}")
        if self.q_lora_rank < 0:
            raise ValueError(f"LatentAttention.q_lora_rank must be >= 0, got {self.q_lora_rank}")


MAX_MTP = 16  # multi-token prediction depths (DeepSeek-V3 trains with 1)


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
    # Optional refinements (issue 29 for serving, issue 26 for training: costmodels/llm/
    # layer_kinds.py reads them); their defaults leave every shape as it was.
    head_dim: int | None = None  # per-head width when it is not hidden / heads (Qwen3)
    mla: LatentAttention | None = None  # DeepSeek multi-head latent attention
    shared_experts: int = 0  # experts every token runs besides its top_k routed ones
    moe_layer_step: int = 1  # layer i is MoE when (i + 1) % step == 0 (Llama 4 Maverick: 2)
    first_dense_layers: int = 0  # leading dense layers of a MoE model (DeepSeek-V3: 3)
    dense_ffn: int | None = None  # FFN width of a MoE model's dense layers (default: ffn)
    # a token's routed experts lie on at most this many nodes (DeepSeek-V3's node-limited
    # routing, M = 4; costmodels/llm/moe_dispatch.py); 0 = no limit (issue 26)
    node_limit: int = 0
    # issue 38: ``chunked_layers`` attend within ``attention_chunk``-token chunks (Llama 4: its
    # RoPE layers, 3 of 4, chunks of 8,192). Read only by the serving engine's choice of decode
    # kernel (costmodels.serving.engine_presets); FLOPs and cache still count every key.
    attention_chunk: int = 0
    chunked_layers: int = 0
    # issue 39: what gated_mlp alone left implicit (None: as gated_mlp says, i.e. SwiGLU with
    # RoPE and no biases, or GELU with learned positions and biases). ``mlp`` "relu2" is
    # Nemotron-4's squared ReLU (two matrices); setting ``mlp`` sets gated_mlp to match.
    mlp: str | None = None  # "swiglu" | "gelu" | "relu2"
    position: str | None = None  # "learned" | "rope"
    linear_bias: bool | None = None  # biases on the linear layers (GPT-OSS: yes, with SwiGLU)
    qk_norm: bool = False  # a norm of head_dim weights on queries and keys (Qwen3)
    # issue 39: ``sliding_layers`` of the layers attend to the last ``sliding_window`` keys only
    # (GPT-OSS: every second layer, 128); costmodels/llm/layer_kinds.attended_keys
    sliding_window: int = 0
    sliding_layers: int = 0
    # issue 39: DeepSeek-V3's multi-token prediction depth D (arXiv:2412.19437, Sec. 2.2): D
    # modules after the last layer, each a transformer block of the last layer's kind, a 2h x h
    # projection and two norms, sharing the embedding and the output head; Megatron-Core builds
    # them on the last pipeline stage (--mtp-num-layers); costmodels/llm/layer_kinds.py
    mtp: int = 0
    # issue 39: a hybrid model (Nemotron-H, Nemotron 3): one character of BLOCK_KINDS per layer,
    # each layer one norm and one mixer; ``mamba`` prices its M layers (costmodels/llm/mamba.py)
    hybrid_pattern: str = ""
    mamba: Mamba2 | None = None
    # issue 39: LatentMoE (Nemotron 3 Super's ``moe_latent_size``): the MoE layer projects each
    # token from hidden to this width (fc1_latent_proj, a weight every TP rank holds whole),
    # dispatches it, runs the routed experts on it and projects the combined result back
    # (fc2_latent_proj); the shared experts keep the full width. 0: no latent (experts on h).
    moe_latent: int = 0

    def __post_init__(self) -> None:
        self._check_hybrid()
        if self.mlp is not None:
            if self.mlp not in MLP_KINDS:
                raise ValueError(f"TransformerShape.mlp must be one of {'|'.join(MLP_KINDS)}, "
                                 f"got {self.mlp!r}")  # fmt: skip
            object.__setattr__(self, "gated_mlp", self.mlp == "swiglu")
        if not 0 <= self.sliding_layers <= self.layers or (self.sliding_layers > 0) != (
                self.sliding_window > 0):  # fmt: skip
            raise ValueError("TransformerShape.sliding_layers (0..layers) and sliding_window "
                             "must be set together")  # fmt: skip
        if not 0 <= self.chunked_layers <= self.layers or (self.chunked_layers > 0) != (
                self.attention_chunk > 0):  # fmt: skip
            raise ValueError("TransformerShape.chunked_layers (0..layers) and attention_chunk "
                             "must be set together")  # fmt: skip
        if self.position is not None and self.position not in POSITIONS:
            raise ValueError(f"TransformerShape.position must be one of {'|'.join(POSITIONS)}, "
                             f"got {self.position!r}")  # fmt: skip
        for name in ("layers", "hidden", "heads", "seq_len", "vocab", "experts", "top_k",
                     "moe_layer_step"):  # fmt: skip
            if getattr(self, name) < 1:
                raise ValueError(f"TransformerShape.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("head_dim", "dense_ffn"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"TransformerShape.{name} must be >= 1 or None, got {value}")
        if not 0 <= self.mtp <= MAX_MTP:
            raise ValueError(f"TransformerShape.mtp must be 0-{MAX_MTP}, got {self.mtp}")
        if self.moe_latent < 0 or (self.moe_latent and self.experts < 2):
            raise ValueError("TransformerShape.moe_latent (a MoE's latent width) must be >= 0 "
                             "and needs experts")  # fmt: skip
        if self.shared_experts < 0 or self.first_dense_layers < 0 or self.node_limit < 0:
            raise ValueError("TransformerShape.shared_experts, first_dense_layers and node_limit "
                             "must be >= 0")  # fmt: skip
        if self.hidden % self.heads:
            raise ValueError(f"hidden {self.hidden} is not divisible by heads {self.heads}")
        if self.kv_heads is not None and self.heads % self.kv_heads:
            raise ValueError(f"heads {self.heads} is not divisible by kv_heads {self.kv_heads}")

    def _check_hybrid(self) -> None:
        pattern = self.hybrid_pattern
        if not pattern:
            if self.mamba is not None:
                raise ValueError("TransformerShape.mamba needs a hybrid_pattern with M layers")
            return
        if len(pattern) != self.layers or set(pattern) - set(BLOCK_KINDS):
            raise ValueError(f"a hybrid model's layer pattern must have one of {BLOCK_KINDS!r} "
                             f"per layer ({self.layers} layers: --layers cannot change it), got "
                             f"{pattern[:60]!r}")  # fmt: skip
        if self.mtp:
            raise ValueError(f"--mtp {self.mtp}: multi-token prediction is not priced for a "
                             "hybrid model (Nemotron 3's MTP layers are left out); give --mtp 0 "
                             "or leave it out")  # fmt: skip
        if ("M" in pattern) != (self.mamba is not None):
            raise ValueError("TransformerShape.mamba must be set exactly when hybrid_pattern "
                             "has M (Mamba-2) layers")  # fmt: skip
        if ("E" in pattern) != (self.experts > 1):
            raise ValueError("a hybrid model has E (MoE) layers in its pattern exactly when it "
                             "has experts (--experts cannot change it)")  # fmt: skip

    @property
    def expert_width(self) -> int:
        """The width routed experts work on and tokens are dispatched at (hidden or latent)."""
        return self.moe_latent or self.hidden

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
    # with recompute="full": checkpoint every k-th layer only (torchtitan selective_ac_option=k)
    recompute_every: int = 1
    # ZeRO-3 / FSDP: ranks each parameter is sharded over (HSDP: shard inside groups of this
    # size, replicate across the dp / dp_shard groups); 0 = all dp x cp ranks (full shard)
    dp_shard: int = 0
    # issue 39: Megatron's --decoder-first/last-pipeline-num-layers (0: the default split,
    # costmodels/llm/layer_kinds.stage_sizes); the other stages share the rest equally
    first_stage_layers: int = 0
    last_stage_layers: int = 0
    # issue 39: Megatron's --expert-tensor-parallel-size: the experts' own TP degree (0: tp).
    # The experts then sit on ep x etp ranks carved from tp x cp x dp (MoE parallel folding)
    etp: int = 0

    def __post_init__(self) -> None:
        if self.first_stage_layers < 0 or self.last_stage_layers < 0 or self.etp < 0:
            raise ValueError("Layout.first_stage_layers, last_stage_layers and etp must be >= 0")
        for name in ("tp", "pp", "dp", "global_batch", "micro_batch", "interleave", "cp", "ep",
                     "recompute_every"):  # fmt: skip
            if getattr(self, name) < 1:
                raise ValueError(f"Layout.{name} must be >= 1, got {getattr(self, name)}")
        if self.global_batch % (self.dp * self.micro_batch):
            raise ValueError(
                f"global_batch {self.global_batch} is not a multiple of dp x micro_batch "
                f"({self.dp} x {self.micro_batch})"
            )
        if self.zero not in (0, 1, 2, 3):
            raise ValueError(f"Layout.zero must be 0-3, got {self.zero}")
        if self.recompute not in RECOMPUTE_MODES:
            raise ValueError(f"Layout.recompute must be one of {'|'.join(RECOMPUTE_MODES)}: "
                             f"{self.recompute!r}")  # fmt: skip
        if self.dp_shard < 0 or (self.dp_shard and (self.dp * self.cp) % self.dp_shard):
            raise ValueError(f"Layout.dp_shard {self.dp_shard} must divide dp x cp = "
                             f"{self.dp * self.cp} (0 = shard over all of them)")  # fmt: skip

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @property
    def micro_batches(self) -> int:
        """Micro-batches per pipeline per step (m)."""
        return self.global_batch // (self.dp * self.micro_batch)

    @property
    def expert_tp(self) -> int:
        """The experts' tensor-parallel degree (``etp``, or tp when unset)."""
        return self.etp or self.tp

    @property
    def shard_group(self) -> int:
        """Ranks a ZeRO-3/FSDP parameter is sharded over (dp x cp unless HSDP narrows it)."""
        return self.dp_shard or self.dp * self.cp


@dataclass(frozen=True)
class LLMCluster:
    """Identical GPUs, gpus_per_node of them behind one fast intra-node fabric."""

    gpu: GPU
    gpus_per_node: int
    intra_bandwidth_Bps: float  # per GPU, per direction (NVLink/NVSwitch)
    inter_bandwidth_Bps: float  # per GPU, per direction (its share of the node's NICs)
    intra_latency_s: float = 2e-6
    inter_latency_s: float = 5e-6
    power_cap_w: float | None = None  # board power limit in W (costmodels/llm/power.py)
    transport: str | None = None  # costmodels.nccl.transports key across nodes; None: RDMA

    def __post_init__(self) -> None:
        if self.gpus_per_node < 1:
            raise ValueError(f"gpus_per_node must be >= 1, got {self.gpus_per_node}")
        for name in ("intra_bandwidth_Bps", "inter_bandwidth_Bps"):
            if not getattr(self, name) > 0:
                raise ValueError(f"LLMCluster.{name} must be positive")
        if self.power_cap_w is not None and not 0 < self.power_cap_w < float("inf"):
            raise ValueError(f"LLMCluster.power_cap_w must be positive, got {self.power_cap_w}")
