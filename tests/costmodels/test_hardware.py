"""Hardware tables: lookup, internal consistency, sources, and published numbers typed here
from a second source (named beside each) independently of costmodels/hardware."""

from __future__ import annotations

import pytest

from costmodels.hardware import GPUS, LINKS, get_gpu, get_link
from costmodels.workloads.profile import load_profile


@pytest.mark.parametrize(
    ("alias", "name"),
    [("h100", "H100 SXM"), ("H200 sxm", "H200 SXM"), ("a100-40gb-sxm", "A100 40GB SXM"),
     ("rtx 2080 ti", "RTX 2080 Ti"), ("v100", "V100 SXM2")],
)  # fmt: skip
def test_gpu_lookup(alias: str, name: str) -> None:
    assert get_gpu(alias).name == name


@pytest.mark.parametrize(
    ("alias", "name"),
    [("pcie4", "PCIe 4.0 x16"), ("pcie 5.0 x16", "PCIe 5.0 x16"), ("NDR", "InfiniBand NDR"),
     ("nvlink4", "NVLink 4 (H100)"), ("roce-200", "RoCE 200"), ("10gbe", "10 GbE")],
)  # fmt: skip
def test_link_lookup(alias: str, name: str) -> None:
    assert get_link(alias).name == name


def test_unknown_names_list_choices() -> None:
    with pytest.raises(ValueError, match="choices: V100 SXM2"):
        get_gpu("tpu v4")
    with pytest.raises(ValueError, match="choices: PCIe 3.0 x16"):
        get_link("carrier pigeon")


def test_every_entry_has_sources() -> None:
    for gpu in GPUS.values():
        assert gpu.source.strip()
    for link in LINKS.values():
        for text in (link.bandwidth_source, link.latency_source, link.fraction_source):
            assert text.strip()
        # An estimate must say so in its reasoning.
        if link.latency_estimate:
            assert link.latency_source.startswith("estimate")
        if link.fraction_estimate:
            assert link.fraction_source.startswith("estimate")


def test_link_ordering_per_direction() -> None:
    bw = {name: link.bandwidth_Bps for name, link in LINKS.items()}
    assert bw["NVLink 4 (H100)"] > bw["NVLink 3 (A100)"] > bw["PCIe 5.0 x16"]
    assert bw["PCIe 5.0 x16"] > bw["PCIe 4.0 x16"] > bw["PCIe 3.0 x16"]
    assert bw["InfiniBand NDR"] > bw["InfiniBand HDR"] > bw["InfiniBand EDR"]
    assert bw["400 GbE"] > bw["100 GbE"] > bw["25 GbE"] > bw["10 GbE"]
    assert bw["RoCE 100"] == bw["100 GbE"] == bw["InfiniBand EDR"]


def test_alpha_beta_helpers() -> None:
    for link in LINKS.values():
        assert 0 < link.achievable_fraction <= 1
        assert link.alpha_s == link.latency_s > 0
        assert link.beta_s_per_byte == pytest.approx(
            1 / (link.bandwidth_Bps * link.achievable_fraction)
        )
        assert link.beta_s_per_byte >= 1 / link.bandwidth_Bps


def test_gpu_consistency() -> None:
    for gpu in GPUS.values():
        assert gpu.fp16_tflops > gpu.fp32_tflops > 0
        assert gpu.memory_bandwidth_Bps > 0 and gpu.memory_bytes > 0
    assert get_gpu("H200").memory_bandwidth_Bps > get_gpu("H100").memory_bandwidth_Bps
    assert (
        get_gpu("A100 80GB SXM").memory_bandwidth_Bps
        > get_gpu("A100 40GB SXM").memory_bandwidth_Bps
    )


def test_measured_h200_ceilings_stay_under_the_peaks() -> None:
    # The project's own H200 measurement must not beat the vendor peak.
    ceilings = load_profile()["ceilings"]
    h200 = get_gpu("H200")
    assert ceilings["matmul_bfloat16_TFLOPs"] < h200.bf16_tflops
    assert ceilings["matmul_float32_TFLOPs"] < h200.fp32_tflops
    # copy_GBps counts bytes copied; a copy reads and writes each byte once.
    assert 2 * ceilings["copy_GBps"] * 1e9 < 2 * h200.memory_bandwidth_Bps


# Second sources, typed here: hpc-notes.pages.dev PCIe table (x16 GB/s); infiniband.jp table
# (4-lane effective Gbit/s); upb-pc2 wiki A100 40GB (BF16 312, FP32 19.5, 1555 GB/s); hpctech.co.jp
# H100 SXM (BF16 1,979 with sparsity, 3,350 GB/s); aiminingco.com H200 (141 GB, 4.8 TB/s);
# 3dfxzone.it RTX 2080 Ti (616 GB/s); io-tech.fi V100 (900 GB/s).
def test_published_numbers_from_second_sources() -> None:
    assert get_link("PCIe 3.0 x16").bandwidth_Bps / 1e9 == pytest.approx(15.7, abs=0.06)
    assert get_link("PCIe 4.0 x16").bandwidth_Bps / 1e9 == pytest.approx(31.5, abs=0.06)
    assert get_link("PCIe 5.0 x16").bandwidth_Bps / 1e9 == pytest.approx(63.0, abs=0.06)
    for name, gbit in (("EDR", 100), ("HDR", 200), ("NDR", 400)):
        assert get_link(name).bandwidth_Bps * 8 / 1e9 == pytest.approx(gbit)
    a100 = get_gpu("A100 40GB SXM")
    assert (a100.bf16_tflops, a100.fp32_tflops, a100.memory_bandwidth_Bps) == (312, 19.5, 1555e9)
    h100 = get_gpu("H100 SXM")
    assert h100.bf16_tflops == pytest.approx(1979 / 2, abs=0.5)
    assert h100.memory_bandwidth_Bps == 3350e9
    h200 = get_gpu("H200")
    assert (h200.memory_gib, h200.memory_bandwidth_Bps) == (141, 4.8e12)
    assert get_gpu("RTX 2080 Ti").memory_bandwidth_Bps == 616e9
    assert get_gpu("V100").memory_bandwidth_Bps == 900e9


# Issue 16 presets: each dense peak, memory, bandwidth and NVLink figure typed here from the
# source named in the preset (glennklockwood.com B200 page, verda.com per-GPU Blackwell table,
# aiwiki.ai GB200 NVL72, alpharomercoma/MI300X-vs-H200, hpctech.co.jp H100 table, olcf V100).
@pytest.mark.parametrize(
    ("name", "bf16", "fp8", "memory", "bandwidth", "nvlink", "sms"),
    [("B200", 2250, 4500, 180, 7.7e12, 900e9, 148),
     ("GB200", 2500, 5000, 186, 8.0e12, 900e9, 148),
     ("MI300X", 1307.4, 2614.9, 192, 5.3e12, 448e9, 304),
     ("H100 SXM", 989.4, 1978.9, 80, 3.35e12, 450e9, 132),
     ("H100 PCIe", 756.5, 1513, 80, 2.0e12, 300e9, 114),
     ("H200 SXM", 989.4, 1978.9, 141, 4.8e12, 450e9, 132),
     ("A100 80GB SXM", 312, None, 80, 2039e9, 300e9, 108),
     ("V100 SXM2", None, None, 32, 900e9, 150e9, 80)],
)  # fmt: skip
def test_issue16_presets(name, bf16, fp8, memory, bandwidth, nvlink, sms) -> None:  # noqa: ANN001
    gpu = get_gpu(name)
    assert (gpu.bf16_tflops, gpu.fp8_tflops, gpu.memory_gib) == (bf16, fp8, memory)
    assert (gpu.memory_bandwidth_Bps, gpu.nvlink_Bps, gpu.sm_count) == (bandwidth, nvlink, sms)


def _printed(value: float) -> list[str]:
    """The ways a vendor table prints a number: 4500, 4,500, 1307.4, 1,307.4."""
    text = f"{value:,.1f}".removesuffix(".0")
    return [text, text.replace(",", "")]


def test_every_peak_is_in_its_source() -> None:
    """Each dense bf16 and fp8 peak (or its sparse double, as NVIDIA prints it) appears in the
    preset's source text, so a preset cannot drift from the page it cites."""
    for gpu in GPUS.values():
        for peak in (gpu.bf16_tflops, gpu.fp8_tflops):
            if peak is None:
                continue
            candidates = _printed(peak) + _printed(round(2 * peak)) + _printed(2 * peak)
            assert any(c in gpu.source for c in candidates), (gpu.name, peak)


@pytest.mark.parametrize(("alias", "name"), [("b200", "B200"), ("gb200", "GB200"),
                                             ("mi300x", "MI300X"), ("h100-pcie", "H100 PCIe"),
                                             ("h100pcie", "H100 PCIe")])  # fmt: skip
def test_issue16_aliases(alias: str, name: str) -> None:
    assert get_gpu(alias).name == name
