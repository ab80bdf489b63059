"""Models the serving model knows by name beyond the training presets (costmodels.llm.presets):
the ones whose shape needs the serving-only refinements of TransformerShape (head_dim, MoE on
some layers, shared experts, latent attention), every number with where it was read.

- Llama 3.3 70B: the Llama 3.1 70B architecture (80 layers, 8,192, 64 heads, 8 KV heads, FFN
  28,672, vocabulary 128,256, untied): oumi configs/recipes/llama3_3/README.md "Model Info" table.
- Llama 4 Maverick (17B active, 128 experts): the Maverick text config in NVIDIA/TensorRT-LLM
  tests/unittest/_torch/modeling/test_modeling_llama_min_latency.py @b35ac1b6 (reduced there to
  2 of its 48 layers): hidden 5,120, 40 heads of 128, 8 KV heads, experts of 8,192, dense MLPs of
  16,384 (``intermediate_size_mlp``), 128 experts, 1 per token, ``interleave_moe_layer_step`` 2,
  vocabulary 202,048, context 1,048,576; one shared expert per MoE layer (transformers'
  Llama4TextMoe builds ``shared_expert = Llama4TextMLP(config)``). Untied, as Llama 4 Scout's
  config.json says. 400.7B parameters by this count (Meta: 400B).
- Llama 4 Scout (17B active, 16 experts): the same text config with 16 experts on every layer
  (``interleave_moe_layer_step`` 1) and context 10,485,760: meta-llama/Llama-4-Scout-17B-16E's
  config.json as quoted in public code and a vLLM bug report found by search (not read from
  Hugging Face itself; the numbers agree across those copies). 107.8B parameters by this count
  (Meta: 109B, with the vision encoder).
- Qwen3-32B and Qwen3-30B-A3B: citsjtu2020/LLM-Prof sglang/Model_Config.md @8434c8d1 (the
  config.json files: 32B 64 layers, 5,120, 64 heads of 128 (hidden / heads = 80), 8 KV heads,
  FFN 25,600; 30B-A3B 48 layers, 2,048, 32 heads of 128, 4 KV heads, 128 experts of 768, 8 per
  token, ``decoder_sparse_step`` 1; vocabulary 151,936, context 40,960, untied).
- DeepSeek-V3 (671B): volcengine/verl tests/utils/test_flops_counter.py @013146cf (the
  DeepSeek-Prover-V2-671B config, DeepSeek-V3's architecture): 61 layers, 7,168, 128 heads,
  MLA with q_lora 1,536, kv_lora 512, rope 64, nope 128, v 128; 3 dense layers of 18,432
  (``first_k_dense_replace``), 256 routed experts of 2,048, 8 per token, 1 shared; vocabulary
  129,280; 4K pre-training context (arXiv:2412.19437 Sec. 4.2). DeepSeek-R1 has the same
  architecture (the same config keys); its multi-token-prediction layer is not modelled
  (speculative decoding is off).

Llama 4's chunked local attention: 8,192-token chunks (``attention_chunk_size``) on its RoPE
layers, all but every fourth (``no_rope_layer_interval`` 4, the NoPE layers attend to the whole
context): transformers' Llama4TextConfig defaults, 36 of 48 layers. The shapes carry it
(``attention_chunk``, ``chunked_layers``) for TensorRT-LLM's choice of decode kernel
(costmodels.serving.engine_presets); attention FLOPs and the cache still count every key on
every layer (an upper bound beyond 8K tokens; TensorRT-LLM keeps the whole cache).
"""

from __future__ import annotations

from dataclasses import replace

from costmodels.llm.presets import PRESETS, ModelPreset, get_preset
from costmodels.llm.shapes import LatentAttention, TransformerShape

_TRT = "NVIDIA/TensorRT-LLM tests/unittest/_torch/modeling/test_modeling_llama_min_latency.py"
_PROF = "citsjtu2020/LLM-Prof sglang/Model_Config.md @8434c8d1"
_VERL = "volcengine/verl tests/utils/test_flops_counter.py @013146cf"
_DENSE = dict(gated_mlp=True, tied_embeddings=False)


def _llama4(experts: int, step: int, context: int) -> TransformerShape:
    return TransformerShape(
        48,
        5120,
        40,
        context,
        ffn=8192,
        vocab=202_048,
        kv_heads=8,
        experts=experts,
        top_k=1,
        head_dim=128,
        shared_experts=1,
        moe_layer_step=step,
        dense_ffn=16_384,
        attention_chunk=8192,
        chunked_layers=36,
        **_DENSE,
    )


def _serving_presets() -> list[ModelPreset]:
    llama70 = PRESETS["Llama 3.1 70B"].shape
    mla = LatentAttention(
        kv_lora_rank=512,
        qk_rope_head_dim=64,
        qk_nope_head_dim=128,
        v_head_dim=128,
        q_lora_rank=1536,
    )
    return [
        ModelPreset(
            "Llama 3.3 70B",
            llama70,
            "oumi configs/recipes/llama3_3/README.md (same architecture as Llama 3.1 70B)",
            ("llama-3.3-70b", "llama3.3-70b"),
        ),
        ModelPreset(
            "Llama 4 Maverick",
            _llama4(128, 2, 1_048_576),
            f"Maverick text config in {_TRT} @b35ac1b6; transformers Llama4TextMoe",
            ("llama-4-maverick", "llama-4-maverick-17b-128e"),
        ),
        ModelPreset(
            "Llama 4 Scout",
            _llama4(16, 1, 10_485_760),
            "meta-llama/Llama-4-Scout-17B-16E config.json (as quoted publicly)",
            ("llama-4-scout", "llama-4-scout-17b-16e"),
        ),
        ModelPreset(
            "Qwen3 32B",
            TransformerShape(
                64, 5120, 64, 40_960, ffn=25_600, vocab=151_936, kv_heads=8, head_dim=128, **_DENSE
            ),
            f"Qwen3-32B in {_PROF}",
            ("qwen3-32b",),
        ),
        ModelPreset(
            "Qwen3 30B-A3B",
            TransformerShape(
                48,
                2048,
                32,
                40_960,
                ffn=768,
                vocab=151_936,
                kv_heads=4,
                head_dim=128,
                experts=128,
                top_k=8,
                dense_ffn=6144,
                **_DENSE,
            ),
            f"Qwen3-30B-A3B in {_PROF}",
            ("qwen3-30b-a3b",),
        ),
        ModelPreset(
            "DeepSeek-V3 (MLA)",
            TransformerShape(
                61,
                7168,
                128,
                4096,
                ffn=2048,
                vocab=129_280,
                kv_heads=128,
                experts=256,
                top_k=8,
                shared_experts=1,
                first_dense_layers=3,
                dense_ffn=18_432,
                mla=mla,
                **_DENSE,
            ),
            f"DeepSeek-V3 keys in {_VERL}; arXiv:2412.19437",
            ("deepseek-v3-mla", "deepseek-r1", "deepseek r1"),
        ),
    ]


SERVING_PRESETS: dict[str, ModelPreset] = {p.name: p for p in _serving_presets()}
# every training preset, hybrid Mamba-2 models included (costmodels.serving.hybrid, issue 39)
SERVING_MODEL_NAMES: list[str] = [*PRESETS, *SERVING_PRESETS]


def _key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum() or ch == ".")


_BY_KEY = {_key(a): p for p in SERVING_PRESETS.values() for a in (p.name, *p.aliases)}


def serving_preset(name: str) -> ModelPreset:
    """A serving preset or, failing that, a training preset, by name or alias."""
    preset = _BY_KEY.get(_key(str(name)))
    if preset is not None:
        return preset
    try:
        return get_preset(name)
    except ValueError:
        shown = name if len(name) <= 40 else name[:40] + "..."
        raise ValueError(
            f"unknown model {shown!r}; choose from: {', '.join(SERVING_MODEL_NAMES)}"
        ) from None


def serving_shape(name: str, seq_len: int | None = None) -> TransformerShape:
    shape = serving_preset(name).shape
    return shape if seq_len is None else replace(shape, seq_len=seq_len)
