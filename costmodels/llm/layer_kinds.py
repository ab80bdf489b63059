"""Which layers of a model are dense and which are mixture-of-experts, how wide a head is, and
which layers each pipeline stage holds (the training model's reading of a TransformerShape).

* Head width: ``head_dim`` when set (Qwen3: 128 although Qwen3-32B's hidden / heads is 80), else
  hidden / heads. Queries are ``heads x head_dim`` wide, keys and values ``kv_heads x head_dim``;
  MLA (DeepSeek-V2/V3) scores with ``qk_nope + qk_rope`` and returns ``v_head_dim`` per head.
* MoE pattern (one rule: costmodels.serving.layers imports these functions from here):
  layer i (from 0) runs experts when the model has experts, ``i >= first_dense_layers`` and
  ``(i + 1) % moe_layer_step == 0``. DeepSeek-V3 (``first_k_dense_replace`` 3): layers 3-60 of
  61; Llama 4 Maverick (``interleave_moe_layer_step`` 2): every second layer. A MoE model's dense
  layers use ``dense_ffn`` (DeepSeek-V3 18,432) when set.
* Pipeline stages. Equal stages when pp divides the layers. Otherwise each stage gets
  ceil(l / pp) layers and the missing ones are taken one each from the first stage, the last,
  the second, the second-to-last, ... : the stages at the ends also hold the embedding and the
  output layer. Llama 3 405B (126 layers on 16 stages) is trained exactly so: "we reduce one
  Transformer layer each from the first and the last stages" (Llama Team, "The Llama 3 Herd of
  Models", arXiv:2407.21783, Sec. 3.3.2), i.e. 7 + 14 x 8 + 7. Megatron-LM offers the same
  through ``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from costmodels.llm.shapes import BLOCK_KINDS, TransformerShape


def has_linear_bias(shape: TransformerShape) -> bool:
    """Biases on the linear layers: ``linear_bias`` when set (GPT-OSS: SwiGLU with biases;
    Nemotron-4: squared ReLU without), else GPT style (a two-matrix MLP) has them."""
    return shape.linear_bias if shape.linear_bias is not None else not shape.gated_mlp


def has_learned_positions(shape: TransformerShape) -> bool:
    """A learned position table of seq_len x hidden: ``position`` when set (Nemotron-4: RoPE
    with a squared-ReLU MLP), else GPT style (a two-matrix MLP) has one."""
    return shape.position == "learned" if shape.position is not None else not shape.gated_mlp


def sliding_share(shape: TransformerShape) -> float:
    """The share of layers with sliding-window attention (issue 39; GPT-OSS: 1/2)."""
    return shape.sliding_layers / shape.layers if shape.sliding_window else 0.0


def attended_keys(shape: TransformerShape, seq: int | None = None) -> float:
    """Keys one query scores against, averaged over the layers, in the full-matrix count the
    FLOP formulas use (costmodels/llm/compute.py): ``seq`` for full attention, the window for a
    sliding-window layer (its band already is the causal part)."""
    s = shape.seq_len if seq is None else seq
    share = sliding_share(shape)
    return (1 - share) * s + share * min(shape.sliding_window, s)


def head_dim(shape: TransformerShape) -> int:
    """Width of one query/key/value head (``head_dim`` when set, else hidden / heads)."""
    return shape.head_dim if shape.head_dim is not None else shape.hidden // shape.heads


def query_width(shape: TransformerShape) -> int:
    """Width of all query heads together (the attention output projection's input for MHA)."""
    if shape.mla is not None:
        return shape.heads * (shape.mla.qk_nope_head_dim + shape.mla.qk_rope_head_dim)
    return shape.heads * head_dim(shape)


def value_width(shape: TransformerShape) -> int:
    """Width of all value heads together: the attention output before its projection."""
    if shape.mla is not None:
        return shape.heads * shape.mla.v_head_dim
    return shape.heads * head_dim(shape)


def kv_width(shape: TransformerShape) -> int:
    """Width of the key (= value) projection: kv_heads x head_dim (MLA: its per-head keys)."""
    if shape.mla is not None:
        return shape.heads * (shape.mla.qk_nope_head_dim + shape.mla.qk_rope_head_dim)
    return shape.kv_head_count * head_dim(shape)


def is_moe(shape: TransformerShape) -> bool:
    return shape.experts > 1


def is_moe_layer(shape: TransformerShape, index: int) -> bool:
    """Whether layer ``index`` (from 0) runs experts (module docstring; a hybrid model's E)."""
    if shape.hybrid_pattern:
        return shape.hybrid_pattern[index] == "E"
    if not is_moe(shape) or index < shape.first_dense_layers:
        return False
    return (index + 1) % shape.moe_layer_step == 0


def layer_kind(shape: TransformerShape, index: int) -> bool | str:
    """Layer ``index``'s kind as StageTimes.kinds keys it: a hybrid model's pattern character,
    else whether it runs experts (a hybrid model under ZeRO-3 raised KeyError before)."""
    return shape.hybrid_pattern[index] if shape.hybrid_pattern else is_moe_layer(shape, index)


def dense_ffn(shape: TransformerShape) -> int:
    """FFN width of a dense layer (a MoE model's dense layers may differ from its experts)."""
    if is_moe(shape) and shape.dense_ffn is not None:
        return shape.dense_ffn
    return shape.ffn_size


# A layer kind: False (a dense transformer layer), True (a MoE one), or for a hybrid model one
# character of shapes.BLOCK_KINDS ("M", "*", "-", "E": one mixer per layer, issue 39)
Kind = bool | str


@dataclass(frozen=True)
class LayerCounts:
    """Layers of a range (a stage, the model) by kind. A hybrid model's ``blocks`` count its
    layers per BLOCK_KINDS character; ``dense`` / ``moe`` then count the non-E / E ones."""

    dense: int
    moe: int
    blocks: tuple[tuple[str, int], ...] = ()

    @property
    def total(self) -> int:
        return self.dense + self.moe

    def items(self) -> tuple[tuple[Kind, int], ...]:
        """(kind, layers) of every kind present: the block kinds of a hybrid model, else
        (False, dense) and (True, moe)."""
        pairs = self.blocks or ((False, self.dense), (True, self.moe))
        return tuple((kind, n) for kind, n in pairs if n)

    @property
    def mixers(self) -> float:
        """Transformer layers' worth of TP collectives: a hybrid layer has one mixer (attention,
        Mamba-2 or MLP), half a transformer layer's attention + MLP pair."""
        return self.total / 2 if self.blocks else float(self.total)

    def of(self, kind: str) -> int:
        """Layers of one hybrid block kind (0 for a model that is not hybrid)."""
        return dict(self.blocks).get(kind, 0)


def counts_of(shape: TransformerShape, indices: range) -> LayerCounts:
    moe = sum(1 for i in indices if is_moe_layer(shape, i))
    if shape.hybrid_pattern:
        part = shape.hybrid_pattern[indices.start:indices.stop]
        blocks = tuple((kind, part.count(kind)) for kind in BLOCK_KINDS)
        return LayerCounts(len(indices) - moe, moe, blocks)
    return LayerCounts(len(indices) - moe, moe)


def model_counts(shape: TransformerShape) -> LayerCounts:
    return counts_of(shape, range(shape.layers))


def uneven_sizes(layers: int, pp: int, first: int, last: int) -> tuple[int, ...] | str:
    """Megatron's ``--decoder-first/last-pipeline-num-layers`` (issue 39): ``first`` layers on
    the first stage, ``last`` on the last (0: not set), the rest split equally over the other
    stages; a one-line reason (str) when that split does not exist."""
    ends = (first > 0) + (last > 0)
    if pp < 2:
        return "uneven first / last stages need pp > 1"
    middle_stages, rest = pp - ends, layers - first - last
    if rest < middle_stages or (middle_stages == 0 and rest):
        return (f"{first} + {last} layers on the first and last stages leave {rest} for the "
                f"other {middle_stages} stages")  # fmt: skip
    if middle_stages and rest % middle_stages:
        return (f"the {rest} layers left after the first and last stages do not split equally "
                f"over the other {middle_stages} stages")  # fmt: skip
    per = rest // middle_stages if middle_stages else 0
    sizes = [per] * pp
    if first:
        sizes[0] = first
    if last:
        sizes[-1] = last
    return tuple(sizes)


@lru_cache(maxsize=4096)
def stage_sizes(layers: int, pp: int, first: int = 0, last: int = 0) -> tuple[int, ...]:
    """Layers per pipeline stage (module docstring): equal when pp divides ``layers``, else
    ceil(layers / pp) with one fewer on the first, last, second, second-to-last ... stage;
    with ``first`` / ``last`` set, Megatron's uneven split (``uneven_sizes``)."""
    if first or last:
        sizes = uneven_sizes(layers, pp, first, last)
        if isinstance(sizes, str):
            raise ValueError(sizes)
        return sizes
    if pp < 1 or pp > layers:
        raise ValueError(f"pp must be between 1 and the {layers} layers, got {pp}")
    per = math.ceil(layers / pp)
    sizes = [per] * pp
    order = [i for pair in zip(range(pp), range(pp - 1, -1, -1), strict=True) for i in pair]
    seen: list[int] = []
    for stage in order:
        if stage not in seen:
            seen.append(stage)
    for stage in seen[: per * pp - layers]:
        sizes[stage] -= 1
    return tuple(sizes)


def mtp_is_moe(shape: TransformerShape) -> bool:
    """Whether the multi-token-prediction blocks run experts: they are of the last layer's kind
    (Megatron-LM's FLOPs count, training.py: ``last_layer_is_moe * mtp_num_layers``)."""
    return is_moe_layer(shape, shape.layers - 1)


def mtp_counts(shape: TransformerShape) -> LayerCounts:
    """The ``shape.mtp`` multi-token-prediction blocks by kind."""
    moe = shape.mtp if mtp_is_moe(shape) else 0
    return LayerCounts(shape.mtp - moe, moe)


@lru_cache(maxsize=1024)
def stage_counts(shape: TransformerShape, pp: int, first: int = 0,
                 last: int = 0) -> tuple[LayerCounts, ...]:  # fmt: skip
    """Each stage's dense and MoE layers (consecutive layers, sizes from ``stage_sizes``); the
    last stage also runs the multi-token-prediction blocks (Megatron-Core's default placement,
    multi_token_prediction.py: "we only support put all of MTP layers on the last pipeline
    stage" without a custom layout)."""
    out, start = [], 0
    for size in stage_sizes(shape.layers, pp, first, last):
        out.append(counts_of(shape, range(start, start + size)))
        start += size
    if shape.mtp:
        extra = mtp_counts(shape)
        out[-1] = LayerCounts(out[-1].dense + extra.dense, out[-1].moe + extra.moe)
    return tuple(out)
