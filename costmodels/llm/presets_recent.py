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
"""

from __future__ import annotations

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
    return [
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
