"""Llama 2 and Llama 3 parameter tensors, named as Hugging Face's ``LlamaForCausalLM`` names
them (untied input embedding and output head, RMSNorm with a weight only, no biases).

Each decoder block: grouped-query attention (q and o projections d x d; k and v projections
d x (kv_heads * head_dim)), a SwiGLU feed-forward of three d x ffn matrices, two RMSNorms.

- Llama 2: Touvron et al., "Llama 2: Open Foundation and Fine-Tuned Chat Models", arXiv
  2307.09288, 2023 (7B/13B: the LLaMA 1 shapes, 32 and 40 layers, d 4096 and 5120, full
  multi-head attention; 70B: 80 layers, d 8192, 64 heads, grouped-query attention with 8
  key-value heads), vocabulary 32,000. Feed-forward widths 11,008 / 13,824 / 28,672 follow Meta's
  reference sizing rule (2/3 of 4d, times ffn_dim_multiplier, rounded up to multiple_of).
- Llama 3: Llama Team, AI at Meta, "The Llama 3 Herd of Models", arXiv 2407.21783, 2024,
  Table 3 (8B: 32 layers, d 4096, FFN 14,336, 32 heads; 70B: 80, 8192, 28,672, 64; 405B: 126,
  16,384, 53,248, 128; all with 8 key-value heads). The paper gives the vocabulary as "128K";
  the released checkpoints' config has vocab_size 128,256, used here.
"""

from __future__ import annotations

from costmodels.workloads.base import Tensor

HEAD_DIM = 128  # d / heads for every model below


def llama_tensors(
    layers: int, d: int, ffn: int, heads: int, kv_heads: int, vocab: int
) -> tuple[Tensor, ...]:
    """A Llama decoder with untied embeddings."""
    kv_width = kv_heads * HEAD_DIM
    if heads * HEAD_DIM != d:
        raise ValueError(f"heads * {HEAD_DIM} must equal d: {heads} * {HEAD_DIM} != {d}")
    tensors = [Tensor("model.embed_tokens.weight", vocab * d)]
    for i in range(layers):
        p = f"model.layers.{i}"
        tensors += [
            Tensor(f"{p}.self_attn.q_proj.weight", d * d),
            Tensor(f"{p}.self_attn.k_proj.weight", kv_width * d),
            Tensor(f"{p}.self_attn.v_proj.weight", kv_width * d),
            Tensor(f"{p}.self_attn.o_proj.weight", d * d),
            Tensor(f"{p}.mlp.gate_proj.weight", ffn * d),
            Tensor(f"{p}.mlp.up_proj.weight", ffn * d),
            Tensor(f"{p}.mlp.down_proj.weight", d * ffn),
            Tensor(f"{p}.input_layernorm.weight", d),
            Tensor(f"{p}.post_attention_layernorm.weight", d),
        ]
    tensors += [Tensor("model.norm.weight", d), Tensor("lm_head.weight", vocab * d)]
    return tuple(tensors)


def ffn_width(d: int, multiplier: float, multiple_of: int) -> int:
    """Meta's reference sizing of the SwiGLU width: int(2/3 * 4d * multiplier) rounded up."""
    hidden = int(multiplier * int(2 * 4 * d / 3))
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


# (layers, d, ffn, heads, kv_heads, vocab)
LLAMA_CONFIGS: dict[str, tuple[int, int, int, int, int, int]] = {
    "Llama 2 7B": (32, 4096, 11_008, 32, 32, 32_000),
    "Llama 2 13B": (40, 5120, 13_824, 40, 40, 32_000),
    "Llama 2 70B": (80, 8192, 28_672, 64, 8, 32_000),
    "Llama 3 8B": (32, 4096, 14_336, 32, 8, 128_256),
    "Llama 3 70B": (80, 8192, 28_672, 64, 8, 128_256),
    "Llama 3 405B": (126, 16_384, 53_248, 128, 8, 128_256),
}
