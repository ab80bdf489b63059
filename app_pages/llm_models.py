"""The LLM planner's models: the presets of ``commatlas predict-llm --model`` or a size alone.

Named shapes are ``costmodels.llm.presets.PRESETS`` (GPT-3 Table 2.1, Llama 2/3.1, Mixtral,
a DeepSeek-V3-style MoE, Qwen 2.5, Megatron-LM's weak-scaling models; each with its source), so
the page and the command line offer the same list with the same numbers.

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

from costmodels.llm.megatron_table import VOCAB
from costmodels.llm.presets import MODEL_NAMES, PRESETS, preset_shape
from costmodels.llm.shapes import TransformerShape
from costmodels.units import UnitParseError, parse_count

HEAD_WIDTH = 128
MIN_PARAMS, MAX_PARAMS = 1e8, 1e14  # 100M .. 100T: outside, the shape rule means nothing
CUSTOM_SIZE = "Custom size"
#: the families in the order the menus show them, newest first: a menu shows about eight
#: entries before it scrolls, and with GPT-3's eight first a new user saw only GPT-3 and Llama 2
#: and concluded the page had no Llama 3 (issue 42, item 4)
FAMILY_ORDER = ("Llama 4", "Llama 3.3", "Llama 3.1", "Llama 3.2", "Qwen3", "Qwen 2.5",
                "DeepSeek-V3", "Mixtral", "Llama 2", "GPT-3", "Megatron-LM")  # fmt: skip


def menu_order(names: list[str]) -> list[str]:
    """``names`` (a command's presets) in the menus' order: by family (``FAMILY_ORDER``), the
    command's own order within a family; every name kept, none added."""
    def family(name: str) -> int:
        return next((i for i, f in enumerate(FAMILY_ORDER) if name.startswith(f)),
                    len(FAMILY_ORDER))  # fmt: skip

    return sorted(names, key=family)


def menu_help(names: list[str], command: str) -> str:
    """The model menu's help: whose presets these are, how many, which families."""
    families = [f for f in FAMILY_ORDER if any(n.startswith(f) for n in names)]
    return (f"the {len(names)} presets of {command} --model ({', '.join(families)}); type in "
            "the box to filter")


MODEL_CHOICES = [*menu_order(MODEL_NAMES), CUSTOM_SIZE]


def named_shape(name: str, seq_len: int) -> TransformerShape:
    """The named model's shape at ``seq_len`` tokens per sequence."""
    if name not in PRESETS:
        raise ValueError(f"unknown model {name!r}; choose from {MODEL_NAMES}")
    return preset_shape(name, seq_len)


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
