"""Issue 39 item 1: B300 / GB300 presets and the dgx-b200, dgx-b300, gb300-nvl72 clusters,
each number typed here from the page the preset cites (verda.com GB300 NVL72 per-GPU table,
glennklockwood.com B300, acecloud.ai HGX B300, docs.nvidia.com DGX B200 User Guide)."""

from __future__ import annotations

import pytest

from costmodels.calibration.trace.gpu_match import preset_for
from costmodels.hardware import GPUS
from costmodels.hardware.cluster_presets import CLUSTERS
from costmodels.hardware.gpus import get_gpu
from costmodels.llm.gpu_arch import gpu_arch
from costmodels.llm.power import TDP_W, clock_factor
from costmodels.nccl.fabrics import get_fabric
from costmodels.nccl.presets import cluster_system
from costmodels.nccl.transports import TRANSPORTS

# name -> (dense BF16, FP8, FP4 TFLOP/s, FP32, GB, memory B/s, NVLink B/s each way, TDP W)
# verda: "FP4 15 PFLOPS ... FP8 5 ... FP16/BF16 2.5 ... FP32 0.080 ... 1.4 kW" (GB300) and
# "FP4 14 ... FP8 4.5 ... 2.25 ... 0.075 ... 1.1 kW" (B300); 288 GB, 8 TB/s (acecloud.ai,
# glennklockwood.com)
PUBLISHED = {
    "B300": (2250, 4500, 14000, 75, 288, 8e12, 1.8e12 / 2, 1100),
    "GB300": (2500, 5000, 15000, 80, 288, 8e12, 1.8e12 / 2, 1400),
}


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_blackwell_ultra_gpus_match_their_sources(name: str) -> None:
    bf16, fp8, fp4, fp32, gb, bw, nvlink, tdp = PUBLISHED[name]
    gpu = get_gpu(name.lower())
    peaks = (gpu.bf16_tflops, gpu.fp16_tflops, gpu.fp8_tflops, gpu.fp4_tflops)
    assert peaks == (bf16, bf16, fp8, fp4)
    assert (gpu.fp32_tflops, gpu.memory_gib, gpu.memory_bandwidth_Bps) == (fp32, gb, bw)
    assert gpu.nvlink_Bps == nvlink and TDP_W[name] == tdp
    assert "verda.com" in gpu.source and gpu_arch(name) == "blackwell"
    # Blackwell Ultra's FP4 rises 1.5x over Blackwell (GB300 vs GB200), FP8/BF16 do not
    assert GPUS["GB300"].fp4_tflops == 1.5 * GPUS["GB200"].fp4_tflops
    assert GPUS["GB300"].bf16_tflops == GPUS["GB200"].bf16_tflops


def test_fabrics_power_and_trace_names() -> None:
    assert get_fabric("B300").max_gpus == 8 and get_fabric("GB300").max_gpus == 72
    assert get_fabric("GB300").cpu_arch == "arm"
    assert get_fabric("B300").bus_Bps_per_gpu == pytest.approx(18 * 40.1e9)  # NCCL's NVLink 5
    # a 1,100 W B300 capped at 880 W: ((880 - 220) / (1100 - 220)) ** (1/3) = 0.75 ** (1/3)
    assert clock_factor("B300", 880) == pytest.approx(0.75 ** (1 / 3))
    assert preset_for("NVIDIA GB300", None) == "GB300"
    assert preset_for("NVIDIA B300 SXM6 AC", None) == "B300"
    assert preset_for("NVIDIA B200", None) == "B200"


# preset -> (GPU, GPUs per node, NICs x Gbit/s, a phrase of the cited source that states it)
SOURCED = {
    "dgx-b200": ("B200", 8, 8 * 400, "8 x NVIDIA ConnectX-7 Single Port Cards"),
    "dgx-b300": ("B300", 8, 8 * 800, "up to 800 Gb/s per GPU"),
    "gb300-nvl72": ("GB300", 72, 72 * 800, "'72 ConnectX-8 NICs'"),
}


@pytest.mark.parametrize("name", list(SOURCED))
def test_blackwell_clusters(name: str) -> None:
    gpu, per_node, gbit, phrase = SOURCED[name]
    preset = CLUSTERS[name]
    assert (preset.gpu, preset.gpus_per_node) == (gpu, per_node)
    assert preset.nics_per_node * preset.nic_gbit == gbit
    assert phrase in " ".join(preset.sources.values()) and preset.transport in TRANSPORTS
    system = cluster_system(name, 2 * per_node)
    assert system.nodes == 2
    # by hand: NICs x Gbit/s / 8 bytes x the transport's efficiency
    assert system.node_network_Bps == pytest.approx(gbit * 1e9 / 8 * system.transport.efficiency)
