"""Named models of 2025 (issue 39): Qwen3 dense and MoE, GPT-OSS, Kimi K2, Llama 4 and
Nemotron-4, each shape read off its published config and each approximation stated.

Sources (each config was read as public copies of the model's config.json / training YAML hold
it; the published totals are what the tests hold the counts against):

- Qwen3 32B, 30B-A3B, 235B-A22B: Ascend/MindSpeed-RL configs/model/qwen3_32b.yaml,
  qwen3_30b_a3b.yaml, qwen3_235b_a22b.yaml (gitcode.com; num_layers, hidden_size,
  ffn_hidden_size, num_attention_heads, num_query_groups, kv_channels 128, qk_layernorm,
  num_experts 128, moe_router_topk 8, moe_ffn_hidden_size 768 / 1536, padded_vocab_size
  151,936, untied); the same keys in Qwen/Qwen3-235B-A22B's config.json (head_dim 128,
  decoder_sparse_step 1, mlp_only_layers []). Published: 30B total / 3B activated and 235B / 22B
  (docs.nvidia.com NeMo AutoModel "Qwen3 MoE"). Sequence 4,096: Qwen3's general pre-training
  stage (Qwen3 Technical Report, arXiv:2505.09388; verified: false).
- GPT-OSS 20B / 120B: OpenAI's model card (arXiv:2508.10925) as summarised on lephongphu.site
  and docs.studio.nebius.com: 24 / 36 layers, 32 / 128 experts, 4 per token, GQA 64 query and
  8 key-value heads, 201,088-token vocabulary; "116.8B total parameters (5.1B active)", "20.9B
  total parameters (3.6B active)"; config.json keys (hidden_size 2880, intermediate_size 2880,
  head_dim 64, attention_bias true, sliding_window 128, layer_types alternating sliding /
  full, initial_context_length 4096) as copied in public test fixtures.
- Kimi K2: the K2 config.json (text_config of Kimi-K2.5 as copied in public fixtures; the
  model card's "Model Summary": 61 layers with 1 dense, 7168, 64 heads, MLA, 384 experts of 2048,
  8 per token, 1 shared, vocabulary 160K); published "1.04 trillion total parameters", "32
  billion activated" (Kimi K2 report as summarised on worldofsoftware.org). n_group 1: no
  node-limited routing. Sequence 4,096 (rope_scaling.original_max_position_embeddings).
- Llama 4 Scout / Maverick: Llama-4-Scout-17B-16E text_config (48 layers, 5120, 40 heads, 8 KV
  heads, head_dim 128, intermediate_size 8192 per expert, intermediate_size_mlp 16384,
  interleave_moe_layer_step 1, vocabulary 202,048, original_max_position_embeddings 8192) and
  Maverick's (128 experts, interleave_moe_layer_step 2); one shared expert (transformers'
  Llama4TextMoe). Published: 109B / 17B active, 400B / 17B active (ibm.com Llama 4 watsonx
  announcement).
- Nemotron-4 340B: the NeMo model config (num_layers 96, hidden_size 18432, ffn_hidden_size
  73728, num_attention_heads 96, num_query_groups 8, activation squared-relu,
  position_embedding_type rope, max_position_embeddings 4096); no biases, untied, vocabulary
  256,000 (emergentmind.com Nemotron-4 340B summary of the technical report).
- Nemotron-4 15B (Parmar et al., arXiv:2402.16819): 32 layers, 48 heads, 15.6B parameters
  (emergentmind.com Nemotron-4 15B summary); "3.2 billion embedding parameters and 12.5 billion
  non-embedding parameters", RoPE, squared ReLU, no biases, untied, GQA (sh-tsang.medium.com
  review of the report); hidden 6144, FFN 4 x 6144 and 8 key-value heads are the report's Table
  1 as recalled (verified: false) - they reproduce both printed counts (3.15B and 12.48B).
- Nemotron-H 8B / 47B / 56B (issue 39, hybrid Mamba-2): Megatron-Bridge
  src/megatron/bridge/models/nemotronh/nemotron_h_provider.py (NemotronHModelProvider8B, 47B,
  56B: hybrid_layer_pattern, hidden_size, mamba_state_dim, mamba_num_heads, ffn_hidden_size,
  num_attention_heads; base: mamba_num_groups 8, mamba_head_dim 64, num_query_groups 8,
  squared ReLU, seq_length 8192) and nvidia/Nemotron-H-8B-Base-8K's config.json as copied in
  Megatron-Bridge's tests (conv_kernel 4, chunk_size 128, attention_head_dim 128, vocab_size
  131,072, tie_word_embeddings false, no biases). Published: 8,100,852,736 parameters for the 8B
  (a public per-tensor analysis of the checkpoint), "47B" and "56B" model parameters (the model
  cards), and 54 Mamba-2, 54 MLP and 10 attention layers for the 56B (research.nvidia.com
  Nemotron-H page); the 47B's five attention layers (its model card).
- Nemotron 3 Super 120B-A12B (issue 39, LatentMoE): Megatron-Bridge Nemotron3SuperProvider
  (88 layers: 40 M, 40 E, 8 *; hidden 4096; 128 Mamba heads of 64, state 128; 32 heads with 2
  query groups of 128; 512 experts of 2688 on a 1024-wide latent, top 22, a 5376-wide shared
  expert; moe_latent_size 1024), the same keys in NVIDIA-Nemotron-3-Super-120B-A12B's
  config.json as public loaders check them (vocab 131,072, n_groups 8, conv_kernel 4); published
  120B total / 12B active (the model name; the Nemotron 3 white paper, arXiv:2512.20848, names
  LatentMoE and NVFP4 pre-training for Super). Sequence 8,192 as the Nano row (verified: false).
- Nemotron 3 Nano 30B-A3B: Megatron-Bridge Nemotron3NanoProvider (pattern of 23 M, 23 E and 6 *
  layers, hidden 2688, 64 Mamba heads of 64, state 128, 32 heads with 2 query groups of 128,
  128 experts of 1856 with a 3712-wide shared expert, top 6); published 31.6B total, 3.2-3.6B
  active per token (crafiq.ai, apxml.com model summaries). Pre-training sequence 8,192
  (verified: false).
"""

from __future__ import annotations

from costmodels.llm.mamba import Mamba2
from costmodels.llm.shapes import LatentAttention, TransformerShape

# Imported by costmodels/llm/presets.py (ModelPreset lives there): (name, shape, source,
# aliases, approximations printed with every prediction of the model).
Row = tuple[str, TransformerShape, str, tuple[str, ...], tuple[str, ...]]

_MINDSPEED = "Ascend/MindSpeed-RL configs/model/{}.yaml (gitcode.com)"
_GPT_OSS = ("OpenAI gpt-oss model card, arXiv:2508.10925 (116.8B / 20.9B total); config.json "
            "keys as copied in public fixtures")  # fmt: skip
# alternate layers attend within a 128-token window: priced as such (sliding_window /
# sliding_layers); what is left out is said with every prediction
_GPT_OSS_APPROX = ("attention sinks (one learned logit per head) and the router's bias are left "
                   "out",)  # fmt: skip
_LLAMA4 = "Llama-4-{} config.json text_config; {} (ibm.com Llama 4 watsonx announcement)"
_LLAMA4_APPROX = (
    "chunked attention (8,192-token chunks on 3 of 4 layers) is priced as full attention: "
    "exact up to 8,192 tokens per sequence",
)
_RELU2 = ("squared-ReLU activation priced as the GELU element-wise kernel (same bytes)",)
_NEMOTRON_H = ("Megatron-Bridge nemotron_h_provider.py NemotronHModelProvider{}; "
               "Nemotron-H-8B-Base-8K config.json; {} (model card)")  # fmt: skip
_MAMBA_APPROX = ("Mamba-2 layers priced from their FLOPs and bytes (no measured Mamba kernel "
                 "rates); squared ReLU priced as the GELU element-wise kernel",)  # fmt: skip
_H_8B = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
_H_47B = ("M-M-M-M-M-M-M-M-M*-M-M-M-M-M-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-M-M---MM---"
          "M-M*-M-M-M-M-M-")  # fmt: skip
_H_56B = ("M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*"
          "-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-")  # fmt: skip
_NANO3 = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
_SUPER3 = ("MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*"
           "EMEMEMEME")  # fmt: skip
_SUPER3_APPROX = _MAMBA_APPROX + ("its multi-token-prediction layers (mtp_num_layers) are left "
                                  "out",)  # fmt: skip
KIMI_MLA = LatentAttention(kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128,
                           v_head_dim=128, q_lora_rank=1536)  # fmt: skip


def _shape(layers: int, hidden: int, heads: int, context: int, **kw: object) -> TransformerShape:
    return TransformerShape(layers=layers, hidden=hidden, heads=heads, seq_len=context,
                            tied_embeddings=False, **kw)  # type: ignore[arg-type]  # fmt: skip


def recent_presets() -> list[Row]:
    """The issue-39 presets (costmodels/llm/presets.py adds them to PRESETS)."""
    qwen3 = dict(vocab=151_936, head_dim=128, qk_norm=True, gated_mlp=True)
    gpt_oss = dict(vocab=201_088, kv_heads=8, head_dim=64, gated_mlp=True, linear_bias=True,
                   top_k=4, ffn=2880, sliding_window=128)  # fmt: skip
    llama4 = dict(vocab=202_048, kv_heads=8, head_dim=128, gated_mlp=True, ffn=8192, top_k=1,
                  shared_experts=1, dense_ffn=16_384)  # fmt: skip
    hybrid = dict(vocab=131_072, mlp="relu2", position="rope", linear_bias=False)
    big = Mamba2(heads=256, head_dim=64, state=256, groups=8)
    return [
        ("Nemotron-H 8B", _shape(52, 4096, 32, 8192, ffn=21_504, kv_heads=8, hybrid_pattern=_H_8B,
                                 mamba=Mamba2(heads=128, head_dim=64, state=128, groups=8),
                                 **hybrid),
         _NEMOTRON_H.format("8B", "8,100,852,736 parameters"), ("nemotron-h-8b",),
         _MAMBA_APPROX),
        ("Nemotron-H 47B", _shape(98, 8192, 64, 8192, ffn=30_720, kv_heads=8,
                                  hybrid_pattern=_H_47B, mamba=big, **hybrid),
         _NEMOTRON_H.format("47B", "47B"), ("nemotron-h-47b",), _MAMBA_APPROX),
        ("Nemotron-H 56B", _shape(118, 8192, 64, 8192, ffn=32_768, kv_heads=8,
                                  hybrid_pattern=_H_56B, mamba=big, **hybrid),
         _NEMOTRON_H.format("56B", "56B"), ("nemotron-h-56b",), _MAMBA_APPROX),
        ("Nemotron 3 Nano 30B-A3B", _shape(52, 2688, 32, 8192, ffn=1856, kv_heads=2,
                                           head_dim=128, experts=128, top_k=6, shared_experts=2,
                                           hybrid_pattern=_NANO3,
                                           mamba=Mamba2(heads=64, head_dim=64, state=128,
                                                        groups=8), **hybrid),
         "Megatron-Bridge Nemotron3NanoProvider; 31.6B total / 3.2-3.6B active",
         ("nemotron-3-nano", "nemotron-3-nano-30b-a3b"), _MAMBA_APPROX),
        ("Nemotron 3 Super 120B-A12B", _shape(88, 4096, 32, 8192, ffn=2688, kv_heads=2,
                                              head_dim=128, experts=512, top_k=22,
                                              shared_experts=2, moe_latent=1024,
                                              hybrid_pattern=_SUPER3,
                                              mamba=Mamba2(heads=128, head_dim=64, state=128,
                                                           groups=8), **hybrid),
         "Megatron-Bridge Nemotron3SuperProvider; NVIDIA-Nemotron-3-Super-120B-A12B config.json "
         "keys; 120B total / 12B active (the model's name)",
         ("nemotron-3-super", "nemotron-3-super-120b-a12b"), _SUPER3_APPROX),
        ("Qwen3 32B", _shape(64, 5120, 64, 4096, ffn=25_600, kv_heads=8, **qwen3),
         _MINDSPEED.format("qwen3_32b"), ("qwen3-32b",), ()),
        ("Qwen3 30B-A3B", _shape(48, 2048, 32, 4096, ffn=768, kv_heads=4, experts=128, top_k=8,
                                 **qwen3),
         _MINDSPEED.format("qwen3_30b_a3b") + "; 30B / 3B (NeMo AutoModel Qwen3 MoE)",
         ("qwen3-30b-a3b", "qwen3 30b"), ()),
        ("Qwen3 235B-A22B", _shape(94, 4096, 64, 4096, ffn=1536, kv_heads=4, experts=128,
                                   top_k=8, **qwen3),
         _MINDSPEED.format("qwen3_235b_a22b") + "; 235B / 22B (NeMo AutoModel Qwen3 MoE)",
         ("qwen3-235b-a22b", "qwen3 235b"), ()),
        ("GPT-OSS 20B", _shape(24, 2880, 64, 4096, experts=32, sliding_layers=12, **gpt_oss),
         _GPT_OSS,
         ("gpt-oss-20b",), _GPT_OSS_APPROX),
        ("GPT-OSS 120B", _shape(36, 2880, 64, 4096, experts=128, sliding_layers=18, **gpt_oss),
         _GPT_OSS,
         ("gpt-oss-120b",), _GPT_OSS_APPROX),
        ("Kimi K2", _shape(61, 7168, 64, 4096, ffn=2048, vocab=163_840, kv_heads=64,
                           experts=384, top_k=8, shared_experts=1, first_dense_layers=1,
                           dense_ffn=18_432, mla=KIMI_MLA, gated_mlp=True),
         "Kimi K2 config.json (text_config of Kimi-K2.5) and model card; 1.04T / 32B",
         ("kimi-k2", "kimi k2 instruct"), ()),
        ("Llama 4 Scout", _shape(48, 5120, 40, 8192, experts=16, **llama4),
         _LLAMA4.format("Scout-17B-16E", "109B / 17B"), ("llama4-scout", "llama-4-scout"),
         _LLAMA4_APPROX),
        ("Llama 4 Maverick", _shape(48, 5120, 40, 8192, experts=128, moe_layer_step=2,
                                    **llama4),
         _LLAMA4.format("Maverick-17B-128E", "400B / 17B"),
         ("llama4-maverick", "llama-4-maverick"), _LLAMA4_APPROX),
        ("Nemotron-4 340B", _shape(96, 18_432, 96, 4096, ffn=73_728, vocab=256_000, kv_heads=8,
                                   mlp="relu2", position="rope", linear_bias=False),
         "NeMo Nemotron-4-340B model config; emergentmind.com Nemotron-4 340B summary",
         ("nemotron-4-340b", "nemotron4-340b"), _RELU2),
        ("Nemotron-4 15B", _shape(32, 6144, 48, 4096, ffn=24_576, vocab=256_000, kv_heads=8,
                                  mlp="relu2", position="rope", linear_bias=False),
         "Parmar et al., arXiv:2402.16819 (3.2B embedding + 12.5B non-embedding parameters)",
         ("nemotron-4-15b", "nemotron4-15b"), _RELU2),
    ]  # fmt: skip
