"""Layout validity rules (costmodels.llm.layout_check) and the planner's bounded enumeration.

Each rule is checked with a layout that breaks only it (the message must name the flag), the
enumeration against a brute-force filter written from the rules as the issue states them, and
divisors against trial division of every integer.
"""

from __future__ import annotations

import itertools

import pytest

from costmodels.hardware import get_gpu
from costmodels.limits import MAX_GPUS
from costmodels.llm.layout_check import LayoutError, checked_layout
from costmodels.llm.planner import (
    TooManyLayouts,
    bounded_layouts,
    divisors,
    enumerate_layouts,
    prime_factors,
)
from costmodels.llm.shapes import LLMCluster, TransformerShape

LLAMA_7B = TransformerShape(32, 4096, 32, 4096, ffn=11008, vocab=32000, gated_mlp=True)
GQA = TransformerShape(32, 4096, 32, 4096, ffn=14336, kv_heads=8, gated_mlp=True)
MOE = TransformerShape(8, 1024, 16, 2048, ffn=2048, experts=8, top_k=2, gated_mlp=True)
BASE = dict(tp=8, pp=4, dp=2, global_batch=64)


def test_a_valid_layout_passes() -> None:
    layout = checked_layout(LLAMA_7B, **BASE, interleave=2, sequence_parallel=True, cp=2,
                            gpus_per_node=8)  # fmt: skip
    assert (layout.gpus, layout.schedule, layout.micro_batches) == (128, "interleaved", 32)


@pytest.mark.parametrize(
    ("shape", "change", "words"),
    [
        (LLAMA_7B, dict(tp=3), "--tp 3 does not divide --heads 32"),
        (LLAMA_7B, dict(tp=1000), "--tp 1000 does not divide --heads 32"),
        (TransformerShape(32, 4096, 32, 4096, ffn=14336, kv_heads=8, gated_mlp=True), dict(tp=32),
         "--tp 32 is more than --gpus-per-node 8"),  # replicated kv heads are fine, nodes not
        (TransformerShape(32, 4800, 24, 4096, ffn=14400, kv_heads=6, gated_mlp=True),
         dict(tp=4), "--tp 4 neither divides --kv-heads 6 nor is a multiple of it"),
        (TransformerShape(2, 512, 8, 64, ffn=1004), dict(tp=8), "--tp 8 does not divide --ffn"),
        (LLAMA_7B, dict(tp=16), "--tp 16 is more than --gpus-per-node 8"),
        (LLAMA_7B, dict(tp=1, pp=64, dp=1), "--pp 64 is more than --layers 32"),
        (LLAMA_7B, dict(pp=5, dp=1, interleave=2, global_batch=10),
         "--interleave 2 needs equal stages: --pp 5 does not divide --layers 32"),
        (LLAMA_7B, dict(global_batch=63), "--global-batch 63 is not a multiple of --dp x"),
        (LLAMA_7B, dict(pp=1, interleave=2), "--interleave 2 needs --pp > 1"),
        (LLAMA_7B, dict(interleave=3), "--interleave 3 does not divide the 8 layers per stage"),
        (LLAMA_7B, dict(interleave=2, global_batch=4), "multiple of --pp 4"),
        (LLAMA_7B, dict(cp=3, dp=1, global_batch=3), "--cp 3 does not divide --seq-len 4096"),
        (TransformerShape(2, 512, 8, 100), dict(tp=8, pp=1, sequence_parallel=True),
         "--sequence-parallel: --tp 8 does not divide the 100 tokens"),
        (LLAMA_7B, dict(ep=2), "--ep 2 needs a mixture-of-experts model"),
        (MOE, dict(pp=1, ep=3, dp=3, global_batch=3), "--ep 3 does not divide --experts 8"),
        (MOE, dict(pp=1, ep=4), "--ep 4 does not divide the --dp x --cp = 2 ranks"),
        (LLAMA_7B, dict(tp=0), "--tp: must be a whole number from 1"),
        (LLAMA_7B, dict(dp=10**12), "--dp: must be a whole number from 1 to 1,048,576"),
        (LLAMA_7B, dict(micro_batch=2**31), "--micro-batch: must be a whole number"),
        (LLAMA_7B, dict(tp=1, pp=1, dp=1024, cp=2048, global_batch=1024), "GPUs is more than"),
    ],
)  # fmt: skip
def test_each_rule_names_its_flag(shape, change: dict, words: str) -> None:
    with pytest.raises(LayoutError) as exc:
        checked_layout(shape, **{**BASE, **change}, gpus_per_node=8)
    assert words in str(exc.value) and len(str(exc.value).splitlines()) == 1


def test_tp_may_cross_nodes_when_allowed() -> None:
    assert checked_layout(LLAMA_7B, **{**BASE, "tp": 16}, gpus_per_node=None).tp == 16


def test_custom_names_for_the_app() -> None:
    names = {"tp": "Measured TP", "heads": "heads"}
    from costmodels.llm.layout_check import CLI_NAMES

    with pytest.raises(LayoutError, match="Measured TP 3 does not divide heads 32"):
        checked_layout(LLAMA_7B, **{**BASE, "tp": 3}, names={**CLI_NAMES, **names})


# --- divisors and bounded enumeration -------------------------------------------------------


def test_divisors_equal_trial_division() -> None:
    for n in itertools.chain(range(1, 400), (1024, 2**20, 3 * 5 * 7 * 11 * 13, 999_983)):
        assert divisors(n) == [d for d in range(1, n + 1) if n % d == 0], n


def test_factorisation_of_large_counts() -> None:
    """Up to 10^12 (two six-digit primes: the worst case of trial division) answers at once."""
    assert prime_factors(999_983 * 1_000_003) == {999_983: 1, 1_000_003: 1}
    assert divisors(2**39) == [2**k for k in range(40)]
    with pytest.raises(ValueError, match="n: must be a whole number"):
        divisors(10**13)


def brute_force(shape, gpus, per_node, batch, cps, eps) -> set[tuple]:
    """Every (tp, pp, dp, cp, ep, mb, v, zero, sp, rc), filtered by the rules as stated."""
    out = set()
    for tp, pp, cp, ep, mb, v, zero, sp, rc in itertools.product(
        range(1, gpus + 1), range(1, gpus + 1), cps, eps, (1, 2), range(1, shape.layers + 1),
        (0, 1), (False, True), ("none", "full"),
    ):  # fmt: skip
        if gpus % (tp * pp * cp):
            continue
        dp = gpus // (tp * pp * cp)
        kv = shape.kv_head_count  # tp divides the kv heads or replicates each (issue 26)
        if shape.heads % tp or (kv % tp and tp % kv) or shape.ffn_size % tp or tp > per_node:
            continue
        if pp > shape.layers or batch % (dp * mb):  # uneven stages are allowed (issue 26)
            continue
        if v > 1 and (shape.layers % pp or (shape.layers // pp) % v):
            continue
        if v > 1 and v > shape.layers // pp:
            continue
        if v > 1 and (pp == 1 or (batch // (dp * mb)) % pp):
            continue
        if shape.seq_len % cp or (sp and tp > 1 and (shape.seq_len // cp) % tp):
            continue
        if ep > 1 and (shape.experts == 1 or shape.experts % ep or (dp * cp) % ep):
            continue
        if (dp == 1 and zero) or (tp == 1 and sp):
            continue
        out.add((tp, pp, dp, cp, ep, mb, v, zero, sp, rc))
    return out


@pytest.mark.parametrize("shape", [MOE, TransformerShape(4, 256, 4, 96, kv_heads=2)])
def test_enumeration_matches_brute_force_with_cp_and_ep(shape) -> None:
    cluster = LLMCluster(get_gpu("a100"), 4, 300e9, 25e9)
    choices = dict(micro_batches=(1, 2), zero_stages=(0, 1), recompute=("none", "full"),
                   context_parallel=(1, 2, 3), expert_parallel=(1, 2, 4))  # fmt: skip
    found = {
        (x.tp, x.pp, x.dp, x.cp, x.ep, x.micro_batch, x.interleave, x.zero, x.sequence_parallel,
         x.recompute)
        for x in enumerate_layouts(shape, 8, cluster, 16, **choices)
    }  # fmt: skip
    assert found == brute_force(shape, 8, 4, 16, (1, 2, 3), (1, 2, 4))
    assert any(t[3] == 2 for t in found)
    assert any(t[4] > 1 for t in found) == (shape.experts > 1)


def test_huge_counts_are_refused_or_bounded() -> None:
    cluster = LLMCluster(get_gpu("a100"), 8, 300e9, 25e9)
    with pytest.raises(ValueError, match="gpus: must be a whole number from 1 to 1,048,576"):
        next(enumerate_layouts(LLAMA_7B, MAX_GPUS + 1, cluster, 64))
    many = TransformerShape(10_000, 1024, 16, 128)  # 10,000 layers: 25 divisors
    with pytest.raises(TooManyLayouts, match="more than 50 layouts"):
        bounded_layouts(many, 64, cluster, 4096, limit=50)
    # 2^20 GPUs, batch 2^20: the enumeration itself is quick (dp is capped by the batch).
    layouts = bounded_layouts(LLAMA_7B, MAX_GPUS, cluster, 2**20, micro_batches=(1,),
                              zero_stages=(1,), recompute=("full",), sequence_parallel=(True,),
                              max_interleave=1)  # fmt: skip
    assert layouts and all(x.gpus == MAX_GPUS for x in layouts)


# --- the measured layout as text (--measured-layout, the app's calibration box) --------------


def test_measured_layout_text() -> None:
    from costmodels.llm.measured_layout import measured_layout, parse_layout_text

    parsed = parse_layout_text("tp=8, pp=2 ,dp=4,mb=2,v=2,zero=1,recompute=full,sp=on,cp=1,ep=1")
    assert parsed == dict(tp=8, pp=2, dp=4, micro_batch=2, interleave=2, zero=1,
                          recompute="full", sequence_parallel=True, cp=1, ep=1)  # fmt: skip
    base = checked_layout(LLAMA_7B, **BASE)
    moved = measured_layout(LLAMA_7B, "tp=4,dp=4", global_batch=64, base=base)
    assert (moved.tp, moved.pp, moved.dp) == (4, 4, 4)
    for text, words in (("tp=8,tp=4", "tp given twice"), ("", "empty"), ("tp", "is not KEY"),
                        ("tp=x", "tp must be a whole number"), ("sp=yes", "sp must be on or off"),
                        ("zero=5", "zero must be 0, 1, 2 or 3"), ("tp=8" + " " * 300, "longer"),
                        ("recompute=all", "recompute must be")):  # fmt: skip
        with pytest.raises(ValueError, match=words):
            parse_layout_text(text)
    with pytest.raises(ValueError, match="give at least tp, pp and dp"):
        measured_layout(LLAMA_7B, "mb=2", global_batch=64)
    with pytest.raises(LayoutError, match="Box tp 3 does not divide --heads 32"):
        measured_layout(LLAMA_7B, "tp=3,pp=1,dp=1", global_batch=64, label="Box")
