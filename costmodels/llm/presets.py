"""Named transformers (``--model``): GPT-3, Llama 2/3/3.1/3.2, Mixtral, DeepSeek-V3, Qwen 2.5 and
Megatron-LM's weak-scaling models, every number with where it was read.

Sources (repository paths name the commit that was read):

- GPT-3: Brown et al., "Language Models are Few-Shot Learners", NeurIPS 2020, arXiv:2005.14165,
  Table 2.1 (n_layers, d_model, n_heads, d_head; context 2048), GPT-2 vocabulary of 50,257
  (costmodels.workloads.gpt), feed-forward 4 d_model, tied embeddings. Two rows of the table are
  not self-consistent: XL prints 24 heads of 128 for d_model 2048 (24 x 128 = 3072) and 13B
  prints d_model 5140 for 40 heads of 128 (= 5120). We keep d_model and d_head for XL (16 heads,
  which keeps the printed 1.3B) and n_heads x d_head = 5120 for 13B (5140 is not divisible by 40).
- Llama 2 7B/13B/70B: ``costmodels.workloads.llama`` (Touvron et al. 2023); context 4,096 from
  the published config.json as copied in scaleapi/llm-engine
  model-engine/tests/unit/domain/test_llm_use_cases.py @28edd64a (max_position_embeddings 4096).
- Llama 3 / 3.1 8B/70B/405B (same shapes; Llama Team, "The Llama 3 Herd of Models",
  arXiv:2407.21783, Table 3): vocabulary 128,256 and the 8,192-token pre-training context
  (rope_scaling.original_max_position_embeddings) from the Llama 3.1 8B/70B config.json copies in
  mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @79d603f0; tie_word_embeddings false.
- Mixtral 8x7B: mlc-ai/mlc-llm model_preset.py @79d603f0 ("Mixtral-8x7B-v0.1": 32 layers, 4096,
  32 heads, 8 KV heads, intermediate 14,336, 8 local experts, 2 per token, vocabulary 32,000,
  context 32,768, untied). Mixtral 8x22B: scaleapi/llm-engine test_llm_use_cases.py @28edd64a
  (56 layers, 6144, 48 heads, 8 KV heads, intermediate 16,384, 8 experts, 2 per token,
  vocabulary 32,000, context 65,536; no tie key, and MixtralConfig's default is untied).
- DeepSeek-V3: the DeepSeek-V3 architecture keys as copied in volcengine/verl
  tests/utils/test_flops_counter.py @013146cf (config of DeepSeek-Prover-V2-671B: 61 layers,
  hidden 7168, 128 heads, the first 3 layers dense with intermediate 18,432, the others 256
  routed experts of moe_intermediate_size 2048 and 1 shared expert, 8 routed per token, MLA with
  q_lora_rank 1536, kv_lora_rank 512, qk_rope 64, qk_nope 128, v 128, vocabulary 129,280);
  4K pre-training sequences: DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437,
  §4.2, which also states the node-limited routing ("each token will be ensured to be sent to
  at most 4 nodes"; config.json ``n_group`` 8, ``topk_group`` 4). 671.0B parameters (the report's
  671B; the multi-token-prediction module is left out).
  "DeepSeek-V3-style MoE" (the approximation this preset replaced) is an alias.
- Llama 3.2 3B: meta-llama/Llama-3.2-3B's config as written out in LocalResearchGroup/
  llm-foundry llmfoundry/models/llama/config.py (28 layers, 3072, 24 heads, 8 KV heads,
  intermediate 8192, vocabulary 128,256, tied embeddings); the 8,192-token pre-training context
  of the Llama 3.2 family (rope_scaling.original_max_position_embeddings of the Llama-3.2-1B
  config copied in kevinstephano/thunder_model_blocks hf_llama/llama_config.py). The shape
  assumed for the Ultra-Scale Playbook's "3B model" (costmodels/llm/dev_runs.py).
- Qwen 2.5 7B: volcengine/verl test_flops_counter.py @013146cf (Qwen2.5-7B-Instruct: 28 layers,
  3584, 28 heads, 4 KV heads, intermediate 18,944, vocabulary 152,064). Qwen 2.5 72B: the Qwen2
  72B config.json in scaleapi/llm-engine @28edd64a (80 layers, 8192, 64 heads, 8 KV heads,
  intermediate 29,568, vocabulary 152,064, context 32,768, untied), the architecture Qwen2.5-72B
  keeps (several public copies of Qwen2.5-72B-Instruct's config.json carry the same numbers).
  Both untied with a 32,768 context. Qwen's q/k/v biases (0.1 M and 0.8 M parameters) are left
  out.
- Megatron-LM 1.7B ... 1T: ``costmodels.llm.megatron_table.TABLE_1`` (Narayanan et al., SC'21).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from costmodels.llm.megatron_table import SEQ_LEN as MEGATRON_SEQ
from costmodels.llm.megatron_table import TABLE_1
from costmodels.llm.megatron_table import VOCAB as MEGATRON_VOCAB
from costmodels.llm.presets_recent import recent_presets
from costmodels.llm.shapes import LatentAttention, TransformerShape
from costmodels.workloads.gpt import GPT2_VOCAB
from costmodels.workloads.llama import LLAMA_CONFIGS


@dataclass(frozen=True)
class ModelPreset:
    """A named model: the TransformerShape without seq_len, plus its context and source."""

    name: str
    shape: TransformerShape  # seq_len = context, the default sequence length
    source: str
    aliases: tuple[str, ...] = ()
    # what the model cannot price exactly, printed with every prediction (issue 39)
    approximations: tuple[str, ...] = ()

    @property
    def context(self) -> int:
        return self.shape.seq_len


def _shape(layers: int, hidden: int, heads: int, context: int, **kw: object) -> TransformerShape:
    return TransformerShape(layers=layers, hidden=hidden, heads=heads, seq_len=context, **kw)  # type: ignore[arg-type]


_GPT3 = "Brown et al. 2020, arXiv:2005.14165, Table 2.1"
# (name, params as printed, layers, d_model, heads, note)
_GPT3_ROWS = (
    ("Small", "125M", 12, 768, 12, ""),
    ("Medium", "350M", 24, 1024, 16, ""),
    ("Large", "760M", 24, 1536, 16, ""),
    ("XL", "1.3B", 24, 2048, 16, "; table prints 24 heads of 128, 16 x 128 = d_model used"),
    ("2.7B", "2.7B", 32, 2560, 32, ""),
    ("6.7B", "6.7B", 32, 4096, 32, ""),
    ("13B", "13.0B", 40, 5120, 40, "; table prints d_model 5140, 40 x 128 = 5120 used"),
    ("175B", "175.0B", 96, 12_288, 96, ""),
)

DEEPSEEK_MLA = LatentAttention(
    kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128, q_lora_rank=1536
)
_LLAMA2_CONFIG = "config.json copy in scaleapi/llm-engine test_llm_use_cases.py @28edd64a"
_LLAMA3_CONFIG = "Llama 3.1 config.json copies in mlc-ai/mlc-llm model_preset.py @79d603f0"
_MLC = "mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @79d603f0"
_SCALE = "scaleapi/llm-engine model-engine/tests/unit/domain/test_llm_use_cases.py @28edd64a"
_VERL = "volcengine/verl tests/utils/test_flops_counter.py @013146cf"


def _llama(name: str, context: int) -> TransformerShape:
    layers, d, ffn, heads, kv, vocab = LLAMA_CONFIGS[name]
    return _shape(layers, d, heads, context, ffn=ffn, vocab=vocab, kv_heads=kv, gated_mlp=True,
                  tied_embeddings=False)  # fmt: skip


def _presets() -> list[ModelPreset]:
    out = []
    for label, params, layers, d, heads, note in _GPT3_ROWS:
        aliases = (f"gpt3-{label.lower()}", f"gpt3-{params.lower()}", f"gpt-3 {params}")
        out.append(ModelPreset(f"GPT-3 {label}", _shape(layers, d, heads, 2048, vocab=GPT2_VOCAB),
                               f"{_GPT3} ({params}){note}", aliases))  # fmt: skip
    for size in ("7B", "13B", "70B"):
        out.append(ModelPreset(f"Llama 2 {size}", _llama(f"Llama 2 {size}", 4096),
                               f"Touvron et al. 2023; context 4096: {_LLAMA2_CONFIG}"))  # fmt: skip
    out.append(ModelPreset("Llama 3.2 3B", _shape(28, 3072, 24, 8192, ffn=8192, vocab=128_256,
                           kv_heads=8, gated_mlp=True, tied_embeddings=True),
                           "meta-llama/Llama-3.2-3B config in LocalResearchGroup/llm-foundry "
                           "llmfoundry/models/llama/config.py; context: Llama-3.2-1B config in "
                           "kevinstephano/thunder_model_blocks", ("llama3.2-3b",)))  # fmt: skip
    for size in ("8B", "70B", "405B"):
        out.append(ModelPreset(f"Llama 3.1 {size}", _llama(f"Llama 3 {size}", 8192),
                               f"Llama Team 2024, arXiv:2407.21783, Table 3; {_LLAMA3_CONFIG}",
                               (f"Llama 3 {size}", f"llama3-{size}")))  # fmt: skip
    moe = dict(gated_mlp=True, tied_embeddings=False)
    out += [
        ModelPreset("Mixtral 8x7B", _shape(32, 4096, 32, 32_768, ffn=14_336, vocab=32_000,
                    kv_heads=8, experts=8, top_k=2, **moe), f"Mixtral-8x7B-v0.1 in {_MLC}"),
        ModelPreset("Mixtral 8x22B", _shape(56, 6144, 48, 65_536, ffn=16_384, vocab=32_000,
                    kv_heads=8, experts=8, top_k=2, **moe), f"Mixtral 8x22B config in {_SCALE}"),
        ModelPreset("DeepSeek-V3", _shape(61, 7168, 128, 4096, ffn=2048, vocab=129_280,
                    kv_heads=128, experts=256, top_k=8, shared_experts=1, first_dense_layers=3,
                    dense_ffn=18_432, mla=DEEPSEEK_MLA, node_limit=4, **moe),
                    f"DeepSeek-V3 keys in {_VERL}; arXiv:2412.19437 §4.2",
                    ("deepseek-v3", "deepseek v3", "DeepSeek-V3-style MoE")),
        ModelPreset("Qwen 2.5 7B", _shape(28, 3584, 28, 32_768, ffn=18_944, vocab=152_064,
                    kv_heads=4, **moe), f"Qwen2.5-7B-Instruct keys in {_VERL}", ("qwen2.5-7b",)),
        ModelPreset("Qwen 2.5 72B", _shape(80, 8192, 64, 32_768, ffn=29_568, vocab=152_064,
                    kv_heads=8, **moe), f"Qwen2-72B config in {_SCALE} (same architecture)",
                    ("qwen2.5-72b",)),
    ]  # fmt: skip
    out += [ModelPreset(name, shape, source, aliases, approx)
            for name, shape, source, aliases, approx in recent_presets()]  # issue 39
    for run in TABLE_1:
        size = f"{run.params_billion:g}B" if run.params_billion < 1000 else "1T"
        shape = _shape(run.layers, run.hidden, run.heads, MEGATRON_SEQ, vocab=MEGATRON_VOCAB)
        out.append(ModelPreset(f"Megatron-LM {size}", shape, "Narayanan et al., SC'21, Table 1"))
    return out


PRESETS: dict[str, ModelPreset] = {preset.name: preset for preset in _presets()}
MODEL_NAMES: list[str] = list(PRESETS)


def _key(text: str) -> str:
    # Dots stay: "GPT-3 1.3B" and "GPT-3 13B" are different models.
    return "".join(ch for ch in text.lower() if ch.isalnum() or ch == ".")


_BY_KEY = {_key(alias): p for p in PRESETS.values() for alias in (p.name, *p.aliases)}


def get_preset(name: str) -> ModelPreset:
    """A preset by name or alias, ignoring case, spaces and punctuation other than dots
    ("llama-3.1-8b")."""
    preset = _BY_KEY.get(_key(str(name)))
    if preset is None:
        shown = name if len(name) <= 40 else name[:40] + "..."
        raise ValueError(f"unknown model {shown!r}; choose from: {', '.join(PRESETS)}")
    return preset


def alias_note(name: str) -> str:
    """ " (read from the alias 'llama-3-70b')" when ``name`` reaches its preset through an alias
    rather than the preset's own name, so a prediction says which model it priced (issue 30:
    ``llama-3-70b`` was taken as Llama 3.1 70B without a word); "" otherwise."""
    preset = get_preset(name)
    if _key(name) == _key(preset.name):
        return ""
    return f" (read from the alias {name.strip()!r}; {preset.source.split(';')[0]})"


def approximation_note(name: str) -> str:
    """The preset's approximations, each as "; APPROXIMATION: ..." (issue 39: never silent)."""
    return "".join(f"; APPROXIMATION: {text}" for text in get_preset(name).approximations)


def preset_shape(name: str, seq_len: int | None = None) -> TransformerShape:
    """The named model's shape at ``seq_len`` tokens per sequence (default: its context)."""
    shape = get_preset(name).shape
    return shape if seq_len is None else replace(shape, seq_len=seq_len)
