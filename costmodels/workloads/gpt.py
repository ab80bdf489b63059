"""GPT-2 (small to XL) and GPT-3 175B parameter tensors, named as Hugging Face's
``GPT2LMHeadModel`` names them (the output projection is tied to ``wte`` and counted once).

- GPT-2: Radford et al., "Language Models are Unsupervised Multitask Learners", OpenAI 2019,
  Table 2 (12/24/36/48 layers, d_model 768/1024/1280/1600), vocabulary 50,257, context 1024;
  pre-norm blocks plus a final layer norm (section 2.3), feed-forward width 4 d_model.
- GPT-3: Brown et al., "Language Models are Few-Shot Learners", NeurIPS 2020, Table 2.1
  (GPT-3 175B: 96 layers, d_model 12,288, 96 heads of 128, context 2048), "the same model and
  architecture as GPT-2" (section 2.1), hence the GPT-2 vocabulary and tied embeddings assumed
  here. The alternating sparse attention of GPT-3 adds no parameters.
"""

from __future__ import annotations

from costmodels.workloads.base import Tensor

GPT2_VOCAB = 50_257


def gpt_tensors(
    layers: int, d_model: int, context: int, vocab: int = GPT2_VOCAB
) -> tuple[Tensor, ...]:
    """A GPT-2-style decoder: 12 d^2 + 13 d parameters per block, plus embeddings and ln_f."""
    d = d_model
    tensors = [
        Tensor("transformer.wte.weight", vocab * d),
        Tensor("transformer.wpe.weight", context * d),
    ]
    for i in range(layers):
        p = f"transformer.h.{i}"
        # Conv1D layers store weight as (in, out); the count is the same either way.
        tensors += [
            Tensor(f"{p}.ln_1.weight", d),
            Tensor(f"{p}.ln_1.bias", d),
            Tensor(f"{p}.attn.c_attn.weight", d * 3 * d),
            Tensor(f"{p}.attn.c_attn.bias", 3 * d),
            Tensor(f"{p}.attn.c_proj.weight", d * d),
            Tensor(f"{p}.attn.c_proj.bias", d),
            Tensor(f"{p}.ln_2.weight", d),
            Tensor(f"{p}.ln_2.bias", d),
            Tensor(f"{p}.mlp.c_fc.weight", d * 4 * d),
            Tensor(f"{p}.mlp.c_fc.bias", 4 * d),
            Tensor(f"{p}.mlp.c_proj.weight", 4 * d * d),
            Tensor(f"{p}.mlp.c_proj.bias", d),
        ]
    tensors += [Tensor("transformer.ln_f.weight", d), Tensor("transformer.ln_f.bias", d)]
    return tuple(tensors)


# (layers, d_model, context) from the papers' tables.
GPT_CONFIGS: dict[str, tuple[int, int, int]] = {
    "GPT-2 Small": (12, 768, 1024),
    "GPT-2 Medium": (24, 1024, 1024),
    "GPT-2 Large": (36, 1280, 1024),
    "GPT-2 XL": (48, 1600, 1024),
    "GPT-3 175B": (96, 12_288, 2048),
}
