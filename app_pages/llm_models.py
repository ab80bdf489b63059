"""The LLM planner's models: named transformers from the project's catalogues, or a size alone.

Named shapes come from where the project already checked them:

- GPT-3 175B: Brown et al., "Language Models are Few-Shot Learners", NeurIPS 2020, Table 2.1
  (96 layers, d_model 12,288, 96 heads of 128), GPT-2 vocabulary (costmodels.workloads.gpt);
- Llama 2 / Llama 3: ``costmodels.workloads.llama.LLAMA_CONFIGS`` (Touvron et al. 2023; Llama
  Team 2024, Table 3): SwiGLU, grouped-query attention, untied embeddings;
- Megatron-LM's weak-scaling models: ``costmodels.llm.megatron_table.TABLE_1`` (Narayanan et al.,
  SC'21, Table 1), vocabulary 51,200.

A bare size ("30B") becomes a GPT-style shape with GPT-3 175B's proportions: 128-wide heads and
a hidden size of about 128 x layers (175B: 12,288 = 128 x 96). With P ~ 12 l h^2 (Narayanan et
al., Eq. 2, without the small terms) that gives h = (128 P / 12)^(1/3), rounded to a multiple of
1024 so that the head count (h / 128) is a multiple of 8 and every tensor-parallel degree up to
8 divides it, then l = round(P / (12 h^2)). The page shows the shape and its exact parameter
count (costmodels.llm.model_size), which differs from the size typed by the rounding.

>>> shape = shape_for_size(175e9, seq_len=2048)
>>> shape.layers, shape.hidden, shape.heads
(97, 12288, 96)
"""

from __future__ import annotations

from costmodels.llm.megatron_table import TABLE_1, VOCAB
from costmodels.llm.shapes import TransformerShape
from costmodels.units import UnitParseError, parse_count
from costmodels.workloads.gpt import GPT2_VOCAB
from costmodels.workloads.llama import LLAMA_CONFIGS

HEAD_WIDTH = 128
MIN_PARAMS, MAX_PARAMS = 1e8, 1e14  # 100M .. 100T: outside, the shape rule means nothing


def _named() -> dict[str, tuple]:
    # name -> TransformerShape keyword arguments without seq_len (an input of the page)
    named: dict[str, tuple] = {
        "GPT-3 175B": (96, 12_288, 96, None, GPT2_VOCAB, None, False, True),
    }
    for name, (layers, d, ffn, heads, kv, vocab) in LLAMA_CONFIGS.items():
        named[name] = (layers, d, heads, ffn, vocab, kv, True, False)
    for run in TABLE_1:
        size = f"{run.params_billion:g}B" if run.params_billion < 1000 else "1T"
        named[f"Megatron-LM {size}"] = (run.layers, run.hidden, run.heads, None, VOCAB, None,
                                        False, True)  # fmt: skip
    return named


NAMED_LLMS = _named()
CUSTOM_SIZE = "Custom size"
MODEL_CHOICES = [*NAMED_LLMS, CUSTOM_SIZE]


def named_shape(name: str, seq_len: int) -> TransformerShape:
    """The named model's shape at ``seq_len`` tokens per sequence."""
    if name not in NAMED_LLMS:
        raise ValueError(f"unknown model {name!r}; choose from {list(NAMED_LLMS)}")
    layers, hidden, heads, ffn, vocab, kv, gated, tied = NAMED_LLMS[name]
    return TransformerShape(
        layers=layers, hidden=hidden, heads=heads, seq_len=seq_len, ffn=ffn, vocab=vocab,
        kv_heads=kv, gated_mlp=gated, tied_embeddings=tied,
    )  # fmt: skip


def shape_for_size(params: float, seq_len: int) -> TransformerShape:
    """A GPT-style shape of about ``params`` parameters (the rule of the module docstring)."""
    if not MIN_PARAMS <= params <= MAX_PARAMS:
        raise ValueError(
            f"Model size: {params:.3g} parameters is outside {MIN_PARAMS:.0e} .. "
            f"{MAX_PARAMS:.0e} (100M .. 100T)"
        )
    cube = (HEAD_WIDTH * params / 12) ** (1 / 3)
    hidden = max(1024, 1024 * round(cube / 1024))
    layers = max(1, round(params / (12 * hidden**2)))
    return TransformerShape(layers, hidden, hidden // HEAD_WIDTH, seq_len, vocab=VOCAB)


def model_shape(choice: str, size_text: str, seq_len: int) -> TransformerShape:
    """The shape the sidebar describes; ValueError (UnitParseError for the size) names the input."""
    if choice == CUSTOM_SIZE:
        try:
            params = parse_count(size_text, what="Model size")
        except UnitParseError as exc:
            raise UnitParseError(str(exc)) from None
        return shape_for_size(params, seq_len)
    return named_shape(choice, seq_len)
