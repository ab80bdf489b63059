"""Flash-attention passes priced at the published rate of their implementation (issue 36 item 3).

The table's numbers are the flash-attention repository's own forward + backward benchmark
(costmodels/data/flash-attention-rates.csv); these tests hold the lookup, the interpolation, the
split into forward and backward, and that a step prices its attention from them.
"""

from __future__ import annotations

import math

import pytest

from costmodels.hardware import get_gpu
from costmodels.llm.attention import causal_fraction, flash_kernels
from costmodels.llm.attention_rates import (
    ATTENTION_KERNELS,
    fwd_bwd_rate,
    implementation,
    pass_rates,
)
from costmodels.llm.constants import default_constants
from costmodels.llm.kernel_time import kernel_seconds
from costmodels.llm.recipe import TrainingRecipe

A100 = get_gpu("A100 80GB SXM")
H100 = get_gpu("H100 SXM")


def test_table_points_are_returned_as_published() -> None:
    # A100, causal, head 128: Triton port 68 TFLOP/s at 2k, FlashAttention-2 189 at 16k
    assert fwd_bwd_rate(A100, "triton", True, 128, 2048) == pytest.approx(68e12)
    assert fwd_bwd_rate(A100, "flash2", True, 128, 16384) == pytest.approx(189e12)
    assert fwd_bwd_rate(H100, "flash2", False, 64, 4096) == pytest.approx(288e12)
    # the 40 GB A100 has the same SMs and clocks: the same rate
    assert fwd_bwd_rate(get_gpu("A100 40GB SXM"), "triton", True, 128, 2048) == pytest.approx(68e12)


def test_interpolation_in_log_sequence_and_head_width_held_at_the_ends() -> None:
    mid = fwd_bwd_rate(A100, "triton", True, 128, round(2048 * math.sqrt(2)))
    assert mid == pytest.approx((68e12 + 74e12) / 2, rel=1e-3)
    # beyond the last measured sequence the 16k rate holds; below the first, the 512 rate
    assert fwd_bwd_rate(A100, "triton", True, 128, 65536) == pytest.approx(80e12)
    assert fwd_bwd_rate(A100, "triton", True, 128, 128) == pytest.approx(50e12)
    # head 96 halfway between the head-64 and head-128 rates at 4k (76 and 74)
    assert fwd_bwd_rate(A100, "triton", True, 96, 4096) == pytest.approx(75e12)
    assert fwd_bwd_rate(A100, "triton", True, 256, 4096) == pytest.approx(74e12)


def test_unpublished_kernels_and_generations_return_none() -> None:
    assert fwd_bwd_rate(H100, "triton", True, 128, 4096) is None  # no Triton bars on H100
    assert fwd_bwd_rate(H100, "flash3", True, 128, 4096) is None  # forward-only figure
    assert fwd_bwd_rate(get_gpu("B200"), "flash2", True, 128, 4096) is None
    # FlashAttention-3 needs Hopper: a framework's FA3-class kernel on Ampere is FlashAttention-2
    assert implementation(A100, "", 3) == "flash2"
    assert implementation(H100, "", 3) == "flash3"
    assert implementation(H100, "triton", 2) == "triton"


def test_same_generation_scales_by_its_peak() -> None:
    h100 = fwd_bwd_rate(H100, "flash2", True, 128, 8192)
    assert fwd_bwd_rate(get_gpu("H200 SXM"), "flash2", True, 128, 8192) == pytest.approx(h100)
    pcie = get_gpu("H100 PCIe")
    ratio = (pcie.bf16_tflops or 0) / (H100.bf16_tflops or 1)
    assert fwd_bwd_rate(pcie, "flash2", True, 128, 8192) == pytest.approx(h100 * ratio)


def test_pass_rates_reproduce_the_combined_time() -> None:
    forward, backward = pass_rates(100e12, 1.4)
    assert forward / backward == pytest.approx(1.4)
    assert 1 / forward + 2.5 / backward == pytest.approx(3.5 / 100e12)


def test_a_flash_pass_is_timed_at_the_published_rate() -> None:
    constants = default_constants()
    fwd, bwd = flash_kernels(1, 16384, 16384, 64, 64, 128)  # 8192 blocks: whole waves
    fwd = fwd.__class__(**{**fwd.__dict__, "attention_kernel": "triton"})
    bwd = bwd.__class__(**{**bwd.__dict__, "attention_kernel": "triton"})
    share = constants.flash_fwd_fraction_ampere / constants.flash_bwd_fraction_ampere
    # the benchmark counts half the score blocks of a causal pass, the kernel the (n + 1) / 2n
    # it computes: the rate is scaled so the published time is kept
    counted = causal_fraction(16384) / 0.5
    assert counted == pytest.approx(129 / 128)
    rate_f, rate_b = pass_rates(80e12 * counted, share)
    waves = 8192 / (math.ceil(8192 / A100.sm_count) * A100.sm_count)
    gap = constants.kernel_launch_s
    assert kernel_seconds(fwd, A100, constants) == pytest.approx(
        gap + fwd.flops / (rate_f * waves), rel=1e-9)  # fmt: skip
    assert kernel_seconds(bwd, A100, constants) == pytest.approx(
        3 * gap + bwd.flops / (rate_b * waves), rel=1e-9)  # fmt: skip
    # FlashAttention-2 (the framework default on A100) is 189 / 80 times faster at this shape
    plain = kernel_seconds(flash_kernels(1, 16384, 16384, 64, 64, 128)[0], A100, constants) - gap
    assert (kernel_seconds(fwd, A100, constants) - gap) / plain == pytest.approx(189 / 80)


def test_recipe_rejects_an_unknown_attention_kernel() -> None:
    with pytest.raises(ValueError, match="attention kernel must be one of"):
        TrainingRecipe(attention_kernel="flash4")
    assert all(TrainingRecipe(attention_kernel=k).attention_kernel == k for k in ATTENTION_KERNELS)
